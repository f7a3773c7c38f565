import { z } from 'zod';
import { defineEvent } from '../envelope.js';
import { ActorSchema, PolicyRefSchema } from './common.js';

/** Where in the agent process (or service) a decision was taken. */
export const BoundarySchema = z.enum([
  'agent-entry',
  'input',
  'output',
  'stream',
  'tool',
  'egress',
  'guardrail',
  'approval',
  'ledger',
  'policy',
]);

export const DecisionOutcomeSchema = z.enum([
  'allowed',
  'denied',
  'masked',
  'rewritten',
  'observed',
  'approval-required',
  'error',
]);
export type DecisionOutcome = z.infer<typeof DecisionOutcomeSchema>;

/**
 * One decision of record. `reason` is a static text chosen by code, never inspected
 * content; redaction is recorded as the paths that were masked, never the values.
 */
export const DecisionRecordedV1 = defineEvent(
  'DecisionRecorded',
  1,
  z.object({
    decisionId: z.uuid(),
    boundary: BoundarySchema,
    outcome: DecisionOutcomeSchema,
    /** Stable machine code, e.g. `TOOL.EGRESS_HOST_NOT_DECLARED`. */
    code: z.string().min(1).max(128),
    reason: z.string().max(512),
    actor: ActorSchema.optional(),
    agentId: z.string().min(1).optional(),
    runId: z.string().min(1).optional(),
    toolId: z.string().min(1).optional(),
    policy: PolicyRefSchema.optional(),
    redactedPaths: z.array(z.string()).default([]),
    durationMs: z.number().nonnegative().optional(),
    /** Names of what matched (detector or policy names), never the matched text. */
    detections: z.array(z.string().max(128)).optional(),
    /** Scalar facts about the decision (counts, flags); never inspected content. */
    attributes: z.record(z.string(), z.union([z.string().max(256), z.number(), z.boolean()])).optional(),
    /** Which gate path led here (e.g. `generate`, `stream`, `http-start`), from trusted context. */
    entryPath: z.string().min(1).max(128).optional(),
    threadId: z.string().min(1).optional(),
  }),
);
export type DecisionRecorded = z.infer<typeof DecisionRecordedV1>;
