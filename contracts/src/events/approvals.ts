import { z } from 'zod';
import { defineEvent } from '../envelope.js';
import { SealedSchema } from '../sealing.js';
import { ActorSchema, JsonValueSchema, ScopeSchema } from './common.js';

/**
 * Bounds on what an agent may write (it is the least trusted writer): a request past them is
 * refused by the guard before it is sent and ignored (and reported) by every fold.
 */
export const APPROVAL_REQUEST_LIMITS = Object.freeze({
  /** The whole event, canonical JSON, UTF-8 bytes. */
  eventBytes: 64 * 1024,
  /** Each of `arguments`, `dryRunPreview` and `inputSchema`, canonical JSON, UTF-8 bytes. */
  fieldBytes: 16 * 1024,
});

const RequestFields = {
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
};

/**
 * A tool call asks a person for a grant (first edition). Unsigned: its author is unknown, so
 * folds read it (a user's log holds them) but never let it grant (see `@gatehouse/approvals`).
 */
export const ApprovalRequestedV1 = defineEvent('ApprovalRequested', 1, z.object(RequestFields));

/**
 * A tool call asks a person for a grant: an attributed claim, signed by the requesting agent's
 * key (`claims.ts`), for one tool call. Keyed (and identified) by the approval id, which is
 * derived from the scope, the requester and the tool call id, so no one else can claim it first.
 * `scope.argumentsHash` commits to the real arguments: the sha-256 of their canonical JSON with
 * each redacted value replaced by `{ "$redacted": <digest> }` (`redactionDigests`, salted so a
 * short value cannot be guessed from it); the shown `arguments` hold the redaction marker there.
 * Every fold recomputes the commitment from what a reviewer is shown and ignores a mismatch.
 */
export const ApprovalRequestedV2 = defineEvent(
  'ApprovalRequested',
  2,
  z
    .object({
      ...RequestFields,
      redactedPaths: z.array(z.string().max(512)).max(100).default([]),
      /** The tool call this approval is for: one approval grants one execution of one call. */
      toolCallId: z.string().min(1).max(256),
      /** Per redacted pointer, the salted digest of the removed value (hex sha-256). */
      redactionDigests: z.record(z.string().max(512), z.string().regex(/^[\da-f]{64}$/)).default({}),
      /**
       * The request's content (`RequestContentSchema`: arguments, preview, reason, description,
       * input schema, on-behalf-of) sealed with the tenant's content key (`sealing.ts`), so other
       * tenants' agents reading the topic learn nothing of it; then `arguments` is null and
       * `reason` empty here. Absent: the content is in clear (a tenant without a content key).
       */
      sealed: SealedSchema.optional(),
    })
    .refine((p) => sameKeys(p.redactedPaths, Object.keys(p.redactionDigests)), {
      message: 'redactionDigests must name exactly the redacted paths',
      path: ['redactionDigests'],
    })
    .refine((p) => p.sealed === undefined || (p.arguments === null && p.reason === '' && p.inputSchema === undefined && p.toolDescription === undefined && p.dryRunPreview === undefined && p.onBehalfOf === undefined), {
      message: 'a sealed request carries its content only in the sealed box',
      path: ['sealed'],
    }),
);

/** What a second-edition request's sealed box holds. */
export const RequestContentSchema = z.strictObject({
  arguments: JsonValueSchema,
  inputSchema: RequestFields.inputSchema,
  toolDescription: RequestFields.toolDescription,
  dryRunPreview: RequestFields.dryRunPreview,
  onBehalfOf: RequestFields.onBehalfOf,
  reason: RequestFields.reason,
});
export type RequestContent = z.infer<typeof RequestContentSchema>;

function sameKeys(a: readonly string[], b: readonly string[]): boolean {
  if (a.length !== b.length) return false;
  const set = new Set(a);
  return set.size === a.length && b.every((k) => set.has(k));
}

export type ApprovalRequestedV1Event = z.infer<typeof ApprovalRequestedV1>;
export type ApprovalRequestedV2Event = z.infer<typeof ApprovalRequestedV2>;
/** Either edition of a request, as a fold reads it. */
export type ApprovalRequested = ApprovalRequestedV1Event | ApprovalRequestedV2Event;

export const ApprovalVerdictSchema = z.enum(['approve', 'approve-with-edits', 'deny']);

const DecisionFields = {
  approvalId: z.string().min(1),
  verdict: ApprovalVerdictSchema,
  reviewer: ActorSchema,
  comment: z.string().max(2000).optional(),
  /** Present only for `approve-with-edits`: the arguments the tool must run with. */
  editedArguments: JsonValueSchema.optional(),
};

/**
 * A reviewer decided (first edition). Written (and signed) only by the approval service. It names
 * no use-by time: folds give its grant a default one from the decision's log time, so no grant
 * of an old log is honoured for ever.
 */
export const ApprovalDecidedV1 = defineEvent(
  'ApprovalDecided',
  1,
  z.object(DecisionFields).refine((p) => (p.verdict === 'approve-with-edits') === (p.editedArguments !== undefined), {
    message: 'editedArguments is required for approve-with-edits and forbidden otherwise',
    path: ['editedArguments'],
  }),
);
export type ApprovalDecidedV1Event = z.infer<typeof ApprovalDecidedV1>;

/**
 * A reviewer decided (second edition): what the reviewer said of the call (edited arguments,
 * comment) may be sealed with the tenant's content key like the request it answers. Written
 * (and signed) only by the approval service.
 */
export const ApprovalDecidedV2 = defineEvent(
  'ApprovalDecided',
  2,
  z
    .object({
      ...DecisionFields,
      /** The grant is void after this instant (judged by the log time of its use, `ApprovalUsed`); a denial has none. */
      useBy: z.iso.datetime({ offset: true }).optional(),
      /** `DecisionContentSchema` sealed with the tenant's content key; then neither comment nor edits are in clear. */
      sealed: SealedSchema.optional(),
    })
    .refine((p) => p.sealed === undefined || (p.comment === undefined && p.editedArguments === undefined), {
      message: 'a sealed decision carries its comment and edits only in the sealed box',
      path: ['sealed'],
    })
    .refine((p) => p.verdict === 'approve-with-edits' || p.editedArguments === undefined, {
      message: 'editedArguments is forbidden unless approve-with-edits',
      path: ['editedArguments'],
    }),
);
export type ApprovalDecidedV2Event = z.infer<typeof ApprovalDecidedV2>;
/** Either edition of a decision, as a fold reads it. */
export type ApprovalDecided = ApprovalDecidedV1Event | ApprovalDecidedV2Event;

/** What a second-edition decision's sealed box holds. */
export const DecisionContentSchema = z.strictObject({
  comment: z.string().max(2000).optional(),
  editedArguments: JsonValueSchema.optional(),
});
export type DecisionContent = z.infer<typeof DecisionContentSchema>;

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
    /**
     * Who withdrew it. Counts only when the event is signed by the requester's own agent key or
     * by the approval service (`claims.ts`); a name here alone proves nothing.
     */
    by: ActorSchema,
    reason: z.string().max(512),
  }),
);
export type ApprovalCancelled = z.infer<typeof ApprovalCancelledV1>;

/**
 * The requesting agent uses its grant, once, for the call it was asked for: its signed claim
 * (`claims.ts`). Log order settles two processes racing to use one grant: the first use that the
 * fold accepts wins, every later one is rejected, and a use logged after the grant's use-by time
 * is rejected too. The agent executes only after reading its own use back as accepted.
 */
export const ApprovalUsedV1 = defineEvent(
  'ApprovalUsed',
  1,
  z.object({
    approvalId: z.string().min(1),
    /** The tool call the grant is used for: the one the request named. */
    toolCallId: z.string().min(1).max(256),
    by: ActorSchema,
  }),
);
export type ApprovalUsed = z.infer<typeof ApprovalUsedV1>;
