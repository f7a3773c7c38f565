import { timingSafeEqual } from 'node:crypto';
import { LedgerError } from '../errors.js';
import { type OperatorCredential, tokenDigest } from '../ledger-config.js';

/** Who resolved a key: recorded on the event. */
export interface Operator {
  readonly id: string;
  readonly role: string;
}

/**
 * Checks `Authorization: Bearer <token>` against the configured operators: digests of equal
 * length compared in constant time, every entry checked. Throws LEDGER.UNAUTHORIZED otherwise
 * (always, when no operator is configured).
 */
export function authenticateOperator(authorization: string | undefined, operators: readonly OperatorCredential[]): Operator {
  const match = /^Bearer ([\x21-\x7e]+)$/i.exec(authorization ?? '');
  if (!match?.[1] || operators.length === 0) throw new LedgerError('LEDGER.UNAUTHORIZED');
  const presented = tokenDigest(match[1]);
  let found: OperatorCredential | undefined;
  for (const operator of operators) {
    if (timingSafeEqual(presented, operator.tokenDigest) && found === undefined) found = operator;
  }
  if (!found) throw new LedgerError('LEDGER.UNAUTHORIZED');
  return { id: found.id, role: found.role };
}
