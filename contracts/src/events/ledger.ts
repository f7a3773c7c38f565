import { z } from 'zod';
import { defineEvent } from '../envelope.js';
import { JsonValueSchema } from './common.js';

/**
 * A key as the ledger stores it: opaque to the fold. The service derives it from the
 * authenticated caller's tenant and the caller's own key (`ledgerKeyOf` in @gatehouse/ledger);
 * keys of events written before callers authenticated are the callers' keys as sent.
 */
const LedgerKey = z.string().regex(/^[\da-f]{64}$/, 'must be a hex sha-256 ledger key');
const LeaseToken = z.uuid();
/**
 * The agent the ledger service authenticated for the request that caused the event (absent on
 * events written before callers authenticated). Added, not changed: its absence reads as before.
 */
const Principal = z.string().min(1).max(256);

/** A caller holds the key and may execute. Pending until completed, failed or taken over. */
export const LedgerKeyReservedV1 = defineEvent(
  'LedgerKeyReserved',
  1,
  z.object({
    key: LedgerKey,
    connectorId: z.string().min(1),
    leaseToken: LeaseToken,
    holder: z.string().min(1),
    pendingTtlMs: z.number().int().positive(),
    principal: Principal.optional(),
  }),
);
export type LedgerKeyReserved = z.infer<typeof LedgerKeyReservedV1>;

/** The holder executed and recorded a JSON-native result; later callers get it back. */
export const LedgerKeyCompletedV1 = defineEvent(
  'LedgerKeyCompleted',
  1,
  // No result when the connector returned undefined (the only non-JSON value it may return).
  z.object({ key: LedgerKey, leaseToken: LeaseToken, result: JsonValueSchema.optional() }),
);
export type LedgerKeyCompleted = z.infer<typeof LedgerKeyCompletedV1>;

/** The holder's execution failed; the key is free again. */
export const LedgerKeyFailedV1 = defineEvent(
  'LedgerKeyFailed',
  1,
  z.object({ key: LedgerKey, leaseToken: LeaseToken, code: z.string().min(1), retryable: z.boolean() }),
);
export type LedgerKeyFailed = z.infer<typeof LedgerKeyFailedV1>;

/** A stale reservation passed to a new holder; the earlier attempt is now ambiguous. */
export const LedgerKeyTakenOverV1 = defineEvent(
  'LedgerKeyTakenOver',
  1,
  z.object({
    key: LedgerKey,
    previousLeaseToken: LeaseToken,
    leaseToken: LeaseToken,
    holder: z.string().min(1),
    pendingTtlMs: z.number().int().positive(),
    principal: Principal.optional(),
  }),
);
export type LedgerKeyTakenOver = z.infer<typeof LedgerKeyTakenOverV1>;

/** The new holder's reconcile answer after a takeover: did the earlier attempt's side effect happen? */
export const LedgerKeyReconciledV1 = defineEvent(
  'LedgerKeyReconciled',
  1,
  z.object({
    key: LedgerKey,
    leaseToken: LeaseToken,
    outcome: z.enum(['already-applied', 'not-applied']),
    /** The outside world's result when already applied; it becomes the recorded result. */
    result: JsonValueSchema.optional(),
  }),
);
export type LedgerKeyReconciled = z.infer<typeof LedgerKeyReconciledV1>;

/** An operator's decision on an ambiguous key (no reconcile available). */
export const LedgerKeyResolvedV1 = defineEvent(
  'LedgerKeyResolved',
  1,
  z.object({
    key: LedgerKey,
    decision: z.enum(['re-execute', 'mark-completed']),
    result: JsonValueSchema.optional(),
    operator: z.object({ id: z.string().min(1), role: z.string().min(1) }),
    comment: z.string().max(2000).optional(),
  }),
);
export type LedgerKeyResolved = z.infer<typeof LedgerKeyResolvedV1>;

/**
 * The ledger service's retention: a completed key whose completion is older than `before` is
 * forgotten (its record and result dropped), so the ledger's state stays bounded. A later call
 * with the same key runs again. Clamped to the event's own append time: never the future.
 */
export const LedgerKeyExpiredV1 = defineEvent(
  'LedgerKeyExpired',
  1,
  z.object({ key: LedgerKey, before: z.number().int().nonnegative() }),
);
export type LedgerKeyExpired = z.infer<typeof LedgerKeyExpiredV1>;

/**
 * A request to spend one unit of a shared budget. Every request is on the log; the fold
 * admits it or not by the log append time, and a refused request consumes nothing.
 */
export const LedgerRateConsumedV1 = defineEvent(
  'LedgerRateConsumed',
  1,
  z.object({
    budgetKey: z.string().regex(/^[\da-f]{64}$/, 'must be a hex sha-256 budget key'),
    claimId: z.uuid(),
    /** `fixed-window` (may admit close to twice the budget across a boundary) or `sliding-window` (never more than `count` in any window-length interval). */
    algorithm: z.enum(['fixed-window', 'sliding-window']),
    count: z.number().int().positive(),
    windowMs: z.number().int().positive(),
    principal: Principal.optional(),
  }),
);
export type LedgerRateConsumed = z.infer<typeof LedgerRateConsumedV1>;

/**
 * One chunk of the ledger service's checkpoint of one partition: the fold's state of the keys and
 * budgets that partition holds (`@gatehouse/ledger`'s `ledgerPartitionText`), as of `cut` (the
 * state after every record of the partition before that offset). Written into the partition it
 * describes, so that the topic can delete what lies before a checkpoint: a fold of what remains
 * starts from the last complete checkpoint whose cut the partition still holds. The fold itself
 * changes nothing on one (a full replay already has that state). Chunked: a state may be larger
 * than one record; a checkpoint counts only when all its chunks are there and match `digest`.
 */
export const LedgerCheckpointV1 = defineEvent(
  'LedgerCheckpoint',
  1,
  z.object({
    checkpointId: z.uuid(),
    /** The fold version that wrote the state: another version's checkpoint is never loaded. */
    fold: z.string().min(1).max(64),
    /** The topic it describes, namespace included: a checkpoint copied into another topic never counts there. */
    topic: z.string().min(1).max(249),
    partition: z.number().int().nonnegative(),
    /** The topic's partition count when written: keys map to partitions by it. */
    partitions: z.number().int().positive(),
    /** The next offset of `partition` the state has not applied (decimal). */
    cut: z.string().regex(/^\d{1,19}$/),
    chunk: z.number().int().nonnegative(),
    chunks: z.number().int().positive(),
    /** sha-256 (hex) of the whole state text, all chunks joined. */
    digest: z.string().regex(/^[\da-f]{64}$/),
    data: z.string().max(262_144),
  }).refine((p) => p.chunk < p.chunks, { message: 'chunk must be below chunks', path: ['chunk'] }),
);
export type LedgerCheckpoint = z.infer<typeof LedgerCheckpointV1>;
