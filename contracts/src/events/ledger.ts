import { z } from 'zod';
import { defineEvent } from '../envelope.js';
import { JsonValueSchema } from './common.js';

const LedgerKey = z.string().regex(/^[\da-f]{64}$/, 'must be a hex sha-256 ledger key');
const LeaseToken = z.uuid();

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
  }),
);
export type LedgerKeyReserved = z.infer<typeof LedgerKeyReservedV1>;

/** The holder executed and recorded a JSON-native result; later callers get it back. */
export const LedgerKeyCompletedV1 = defineEvent(
  'LedgerKeyCompleted',
  1,
  z.object({ key: LedgerKey, leaseToken: LeaseToken, result: JsonValueSchema }),
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
  }),
);
export type LedgerKeyTakenOver = z.infer<typeof LedgerKeyTakenOverV1>;
