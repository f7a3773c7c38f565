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

/**
 * The approval id of a second-edition request: bound to the scope, the requesting agent and the
 * tool call, so an approval id can be claimed only by the agent whose call it is (a claim is
 * signed by its key), and one approval is for one call. The domain string keeps these ids apart
 * from the first edition's.
 */
export function approvalIdForCall(scope: Scope, requesterId: string, toolCallId: string): string {
  const fields = ['gatehouse.approval.v2', scope.tenant, scope.connectorId, scope.executionId, scope.argumentsHash, requesterId, toolCallId];
  return `appr_${createHash('sha256').update(JSON.stringify(fields)).digest('hex')}`;
}
