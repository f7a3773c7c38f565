import { createHash } from 'node:crypto';
import { type Scope } from '@gatehouse/contracts';

/**
 * The approval id of a grant scope: `appr_` + hex sha-256 of the JSON array of its fields.
 * Deterministic, so a retried tool call finds its existing approval; the JSON array keeps field
 * boundaries, so `a:b` + `c` and `a` + `b:c` cannot collide.
 */
export function approvalIdForScope(scope: Scope): string {
  const fields = [scope.tenant, scope.connectorId, scope.executionId, scope.argumentsHash];
  return `appr_${createHash('sha256').update(JSON.stringify(fields)).digest('hex')}`;
}
