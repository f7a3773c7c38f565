// Random approval logs, as the approval service and an adversarial agent write them: what the
// property tests of bounded history (issue 17) fold whole, from a horizon, and from a snapshot.
import { createHash } from 'node:crypto';
import { ApprovalCancelledV1, ApprovalDecidedV2, ApprovalExpiredV1, ApprovalRequestedV2, ApprovalUsedV1, createEvent, type Scope, signClaim, signEvent } from '@gatehouse/contracts';
import { type Random, TEST_AGENT_KEY, TEST_KEYRING, TEST_KEYS } from '@gatehouse/contracts/testing';
import { approvalIdForCall } from '../approval-id.js';
import { type ApprovalEvent, applyApprovalEvent } from '../fold.js';
import { type ApprovalLimits, createApprovalsState } from '../state.js';

const hash = (s: string) => createHash('sha256').update(s).digest('hex');
const requester = { id: 'agent:billing', role: 'agent', kind: 'agent' as const };
const alice = { id: 'user:alice', role: 'approver', kind: 'human' as const };

/** The scope and approval id of test call `n` (by the test agent, tenant `acme`). */
export const callScope = (n: number): Scope => ({ tenant: 'acme', connectorId: 'payments.refund', executionId: `run-${n}`, argumentsHash: hash(`{"amount":${n}}`) });
export const callApprovalId = (n: number) => approvalIdForCall(callScope(n), requester.id, `call-${n}`);
const meta = (n: number, causationId?: string) => ({ source: 'service:approval', tenant: 'acme', subject: callApprovalId(n), ...(causationId !== undefined && { causationId }) });
const claimMeta = (n: number) => ({ ...meta(n), source: 'guard:test' });

/** The test agent's request for call `n`, pending until `deadline` (ms); every call makes a new event (a re-request). */
export function callRequest(n: number, deadline: number) {
  const payload = {
    approvalId: callApprovalId(n),
    scope: callScope(n),
    arguments: { amount: n },
    redactedPaths: [],
    redactionDigests: {},
    toolCallId: `call-${n}`,
    requester,
    reason: 'refunds need a person',
    deadline: new Date(deadline).toISOString(),
  };
  return signClaim(createEvent(ApprovalRequestedV2, claimMeta(n), payload), TEST_AGENT_KEY);
}

/** A decision on call `n` as the approval service writes it: signed, naming the request it answers. */
export function callDecision(n: number, requestEventId: string, verdict: 'approve' | 'deny', useBy?: number) {
  const payload = { approvalId: callApprovalId(n), verdict, reviewer: alice, ...(useBy !== undefined && verdict !== 'deny' && { useBy: new Date(useBy).toISOString() }) };
  return signEvent(createEvent(ApprovalDecidedV2, meta(n, requestEventId), payload), TEST_KEYS.approval);
}

/** The test agent's use of call `n`'s grant. */
export const callUse = (n: number) => signClaim(createEvent(ApprovalUsedV1, claimMeta(n), { approvalId: callApprovalId(n), toolCallId: `call-${n}`, by: requester }), TEST_AGENT_KEY);
const callCancel = (n: number) => signClaim(createEvent(ApprovalCancelledV1, claimMeta(n), { approvalId: callApprovalId(n), by: requester, reason: 'run aborted' }), TEST_AGENT_KEY);
const callExpiry = (n: number, requestEventId: string, deadline: number) =>
  signEvent(createEvent(ApprovalExpiredV1, meta(n, requestEventId), { approvalId: callApprovalId(n), deadline: new Date(deadline).toISOString() }), TEST_KEYS.approval);

export interface LoggedApprovalEvent {
  readonly event: ApprovalEvent;
  readonly logTime: number;
}

/**
 * A random log of `length` records from `t0` (ms) on: requests with any deadline (some far past
 * `limits`), re-requests of settled calls, decisions with any use-by time, old events copied back
 * onto the log, uses, cancellations and expiries, mostly seconds apart and now and then up to
 * three of `limits`' windows. The service decides only what its own fold of the whole log holds
 * as pending; new calls come along as old ones settle.
 */
export function randomApprovalLog(random: Random, length: number, limits: ApprovalLimits, t0: number): LoggedApprovalEvent[] {
  const pick = <T>(items: readonly T[]): T => items[Math.floor(random() * items.length)] as T;
  const service = createApprovalsState(TEST_KEYRING, limits);
  const window = limits.maxWaitMs + limits.maxGrantTtlMs;
  const written: ApprovalEvent[] = [];
  const log: LoggedApprovalEvent[] = [];
  let now = t0;
  const append = (event: ApprovalEvent) => {
    applyApprovalEvent(service, event, now);
    written.push(event);
    log.push({ event, logTime: now });
  };
  for (let i = 0; i < length; i += 1) {
    now += random() < 0.85 ? Math.floor(random() * 3_000) : Math.floor(random() * 3 * window);
    const n = random() < 0.1 ? Math.floor(random() * (i / 4 + 1)) : Math.floor(i / 4 + random() * 4);
    const held = service.approvals.get(callApprovalId(n));
    const roll = random();
    if (roll < 0.25) append(callRequest(n, now + Math.floor(random() * 2.5 * limits.maxWaitMs)));
    else if (roll < 0.6 && held?.status === 'pending') append(callDecision(n, held.requestEventId, pick(['approve', 'approve', 'deny'] as const), now + Math.floor(random() * 2 * limits.maxGrantTtlMs)));
    else if (roll < 0.66) append(callUse(n));
    else if (roll < 0.78 && written.length > 0) append(pick([...written.filter((e) => e.type === 'ApprovalDecided'), ...written.slice(-1)])); // a copy of an old event
    else if (roll < 0.86) append(callCancel(n));
    else if (held !== undefined) append(callExpiry(n, held.requestEventId, held.deadline));
  }
  return log;
}
