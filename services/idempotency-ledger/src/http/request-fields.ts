import { type JsonValue } from '@gatehouse/contracts';
import { z } from 'zod';

/**
 * An idempotency or budget key as the caller names it: a hex sha-256 (the guard hashes tenant,
 * connector and business key). The ledger stores it scoped by the caller's tenant (`ledgerKeyOf`).
 */
export const LedgerKeyField = z.string().regex(/^[\da-f]{64}$/, 'must be a hex sha-256 (64 lower-case hex digits)');

/** A lease token handed out with a reservation. */
export const LeaseTokenField = z.uuid({ error: 'must be a lease token (uuid)' });

/** A short identifier: connector, holder, failure code. */
export const IdentifierField = z.string().min(1, 'must not be empty').max(256, 'must be at most 256 characters');

const MAX_DEPTH = 64;

function depthAtMost(value: unknown, max: number): boolean {
  // Iterative, so a hostile body cannot overflow the stack here or in the contract check after.
  const stack: { value: unknown; depth: number }[] = [{ value, depth: 1 }];
  while (stack.length > 0) {
    const { value: current, depth } = stack.pop() as { value: unknown; depth: number };
    if (current === null || typeof current !== 'object') continue;
    if (depth > max) return false;
    for (const child of Object.values(current)) stack.push({ value: child, depth: depth + 1 });
  }
  return true;
}

/**
 * A recorded result. A JSON body can only carry JSON-native values; what is left to check is
 * the nesting depth. The contract validates the value again when the event is written.
 */
export const ResultField = z
  .unknown()
  .refine((value) => value !== undefined && depthAtMost(value, MAX_DEPTH), `must be a JSON value nested at most ${MAX_DEPTH} levels deep`)
  .transform((value) => value as JsonValue);
