import { z } from 'zod';
import { defineEvent } from '../envelope.js';
import { ActorSchema, JsonValueSchema, ScopeSchema } from './common.js';

/** A tool call asks a person for a grant. Keyed (and identified) by the approval id. */
export const ApprovalRequestedV1 = defineEvent(
  'ApprovalRequested',
  1,
  z.object({
    approvalId: z.string().min(1),
    scope: ScopeSchema,
    /** Tool-call arguments as the reviewer must see them, already redacted where policy says so. */
    arguments: JsonValueSchema,
    redactedPaths: z.array(z.string()).default([]),
    /** JSON Schema of the tool's input, so a reviewer's edit can be validated. */
    inputSchema: z.record(z.string(), JsonValueSchema).optional(),
    /** The connector's description, shown to the reviewer beside the arguments. */
    toolDescription: z.string().max(2000).optional(),
    /** What the call would do, from the connector's dry run, when it has one: the reviewer judges the effect. */
    dryRunPreview: JsonValueSchema.optional(),
    requester: ActorSchema,
    /** The principal the requesting agent acts for (the human who started the run): they may not approve either. */
    onBehalfOf: ActorSchema.optional(),
    reason: z.string().max(512),
    /** The request is void after this instant (compared with the log's append time). */
    deadline: z.iso.datetime({ offset: true }),
    /**
     * `required` distinct approvals from the listed reviewers settle it (any of them may deny);
     * absent: the first decision does. Part of the request, so every fold counts the same way.
     */
    quorum: z
      .object({
        required: z.number().int().min(2).max(10),
        reviewers: z.array(z.string().min(1).max(256)).min(2).max(50),
      })
      .refine((q) => q.required <= q.reviewers.length && new Set(q.reviewers).size === q.reviewers.length, {
        message: 'required must not exceed the number of distinct reviewers listed',
      })
      .optional(),
  }),
);
export type ApprovalRequested = z.infer<typeof ApprovalRequestedV1>;

export const ApprovalVerdictSchema = z.enum(['approve', 'approve-with-edits', 'deny']);

/** A reviewer decided. Written (and signed) only by the approval service. */
export const ApprovalDecidedV1 = defineEvent(
  'ApprovalDecided',
  1,
  z.object({
    approvalId: z.string().min(1),
    verdict: ApprovalVerdictSchema,
    reviewer: ActorSchema,
    comment: z.string().max(2000).optional(),
    /** Present only for `approve-with-edits`: the arguments the tool must run with. */
    editedArguments: JsonValueSchema.optional(),
  }).refine((p) => (p.verdict === 'approve-with-edits') === (p.editedArguments !== undefined), {
    message: 'editedArguments is required for approve-with-edits and forbidden otherwise',
    path: ['editedArguments'],
  }),
);
export type ApprovalDecided = z.infer<typeof ApprovalDecidedV1>;

/** The deadline passed before a decision. Written only by the approval service. */
export const ApprovalExpiredV1 = defineEvent(
  'ApprovalExpired',
  1,
  z.object({
    approvalId: z.string().min(1),
    deadline: z.iso.datetime({ offset: true }),
  }),
);
export type ApprovalExpired = z.infer<typeof ApprovalExpiredV1>;

/** The requester withdrew the request before a decision (its run ended or was aborted). */
export const ApprovalCancelledV1 = defineEvent(
  'ApprovalCancelled',
  1,
  z.object({
    approvalId: z.string().min(1),
    /** Who withdrew it: only the requester (or a system actor) may. */
    by: ActorSchema,
    reason: z.string().max(512),
  }),
);
export type ApprovalCancelled = z.infer<typeof ApprovalCancelledV1>;
