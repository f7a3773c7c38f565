import { canonicalJson } from '../json.js';
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

/** Most record digests one checkpoint lists (a checkpoint stays far below Kafka's 1 MB record limit). */
export const MAX_CHECKPOINT_DIGESTS = 1000;

/**
 * A producer vouches for the audit records it wrote. Kafka authenticates who appends to the
 * audit topic, not what a record claims to be (its `source`, its `tenant`), and every producer
 * may append: so each producer signs, every N records or T ms and when it closes, a checkpoint
 * listing the digests (`eventDigest`) of the records it wrote since its previous one, with its
 * own key in the envelope `signature` (a granting service's key, or an agent's claim key). A
 * verifier counts a record as its source's only when a checkpoint signed by a key that may
 * speak for that source and tenant lists its digest (`audit-sources.ts`). One signature per
 * checkpoint keeps signing and verifying off the per-event path.
 *
 * Why the digests are listed rather than only the chain head (`lastSeq`'s hash): a reader of
 * one partition, or one that reads partitions in any order (audit-export's projection), judges a
 * record by one lookup, without walking a producer's chain across partitions; records that carry
 * no chain (a service's security reports) are covered the same way; and a record removed from
 * the log still shows as a digest no record matches. `lastSeq` ties the checkpoint to the hash
 * chain of a chained producer. The envelope's `tenant` is `*` (it covers records of any
 * tenant, each judged by its own), its `subject` the producer, so a producer's checkpoints share
 * a partition, in order.
 */
export const AuditChainCheckpointV1 = defineEvent(
  'AuditChainCheckpoint',
  1,
  z.object({
    /** The producer's stream: the `chain.producer` of the records it covers, when they are chained. */
    producer: z.string().min(1).max(256),
    /** The chain `seq` of the last record covered, for chained producers. */
    lastSeq: z.number().int().min(1).optional(),
    /** `eventDigest` of every record covered, in the order written. */
    digests: z.array(z.string().regex(/^[\da-f]{64}$/, 'must be a hex sha-256')).min(1).max(MAX_CHECKPOINT_DIGESTS),
  }),
);
export type AuditChainCheckpoint = z.infer<typeof AuditChainCheckpointV1>;

/**
 * Bounds on a decision record (every gate, agents among them, writes them): past them the guard
 * refuses to send it (`AUDIT.EVENT_TOO_LARGE`) and audit-export parks it unapplied with that code,
 * never projected or exported (a SIEM line stays small whatever an agent writes).
 */
export const AUDIT_EVENT_LIMITS = Object.freeze({
  /** The whole event, canonical JSON, UTF-8 bytes. */
  eventBytes: 16 * 1024,
});

/** Whether a decision record is past `AUDIT_EVENT_LIMITS`. */
export function decisionTooLarge(event: DecisionRecorded): boolean {
  return Buffer.byteLength(canonicalJson(event), 'utf8') > AUDIT_EVENT_LIMITS.eventBytes;
}

/** Whether an audit-topic event is a decision (not a checkpoint): what readers of decisions keep. */
export function isDecisionRecorded(event: { readonly type: string }): event is DecisionRecorded {
  return event.type === 'DecisionRecorded';
}
