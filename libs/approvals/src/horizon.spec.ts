// Bounded history (issue 17): a reader that starts at `approvalHorizon` instead of offset 0 holds
// every approval that can still grant, and grants nothing a fold of the whole log would not.
import { describe, expect, it } from '@jest/globals';
import { seeded, TEST_KEYRING } from '@gatehouse/contracts/testing';
import { applyApprovalEvent, grantFromApproval } from './fold.js';
import { type ApprovalLimits, type ApprovalsState, approvalHorizon, createApprovalsState, LOG_LIMITS, MAX_APPROVAL_WAIT_MS, MAX_GRANT_TTL_MS } from './state.js';
import { callApprovalId as idOf, callDecision as decision, callRequest as request, callUse as use, randomApprovalLog } from './testing/random-log.js';

const T0 = Date.parse('2030-01-01T00:00:00.000Z');
const LIMITS: ApprovalLimits = { maxWaitMs: 60_000, maxGrantTtlMs: 30_000 };

/** Whether a use of approval `n`'s grant logged at `at` would be accepted: what "can still grant" means. */
function usable(state: ApprovalsState, n: number, at: number): boolean {
  const grant = grantFromApproval(state, idOf(n));
  return grant !== undefined && grant.usedAt === undefined && at <= grant.useBy;
}

describe('a decision answers the request it names', () => {
  it('a signed decision copied onto a re-request of the same id grants nothing (the reader that started after the first request holds the second as new)', () => {
    const first = request(1, T0 + 50_000);
    const approved = decision(1, first.id, 'approve', T0 + 40_000);
    const full = createApprovalsState(TEST_KEYRING, LIMITS);
    expect(applyApprovalEvent(full, first, T0)).toEqual({ kind: 'accepted' });
    expect(applyApprovalEvent(full, approved, T0 + 10_000)).toEqual({ kind: 'accepted' });
    // Long after, the agent asks again for the same call and copies the old decision back onto the log.
    const again = request(1, T0 + 500_000 + 50_000);
    const late = createApprovalsState(TEST_KEYRING, LIMITS);
    for (const state of [full, late]) applyApprovalEvent(state, again, T0 + 500_000);
    expect(full.approvals.get(idOf(1))?.status).toBe('approved');
    expect(late.approvals.get(idOf(1))?.status).toBe('pending');
    expect(applyApprovalEvent(late, approved, T0 + 500_010)).toEqual({ kind: 'rejected', reason: 'other-request' });
    expect(grantFromApproval(late, idOf(1))).toBeUndefined();
    expect(applyApprovalEvent(late, use(1), T0 + 500_020)).toEqual({ kind: 'rejected', reason: 'not-granted' });
  });

  it('the decision the service writes for the request it holds counts', () => {
    const state = createApprovalsState(TEST_KEYRING, LIMITS);
    const first = request(2, T0 + 50_000);
    applyApprovalEvent(state, first, T0);
    expect(applyApprovalEvent(state, decision(2, first.id, 'approve', T0 + 20_000), T0 + 1_000)).toEqual({ kind: 'accepted' });
    expect(usable(state, 2, T0 + 19_000)).toBe(true);
  });
});

describe('an approval matters for a bounded time', () => {
  it('a deadline past the longest wait counts as the longest wait', () => {
    const state = createApprovalsState(TEST_KEYRING, LIMITS);
    const forever = request(3, T0 + 365 * 24 * 3600 * 1000);
    applyApprovalEvent(state, forever, T0);
    expect(state.approvals.get(idOf(3))?.deadline).toBe(T0 + LIMITS.maxWaitMs);
    expect(applyApprovalEvent(state, decision(3, forever.id, 'approve', T0 + 100_000), T0 + LIMITS.maxWaitMs + 1)).toEqual({ kind: 'rejected', reason: 'past-deadline' });
    expect(state.approvals.get(idOf(3))?.status).toBe('expired');
  });

  it('a use-by time past the grant limit counts as the grant limit', () => {
    const state = createApprovalsState(TEST_KEYRING, LIMITS);
    const asked = request(4, T0 + 50_000);
    applyApprovalEvent(state, asked, T0);
    applyApprovalEvent(state, decision(4, asked.id, 'approve', T0 + 365 * 24 * 3600 * 1000), T0 + 1_000);
    expect(grantFromApproval(state, idOf(4))?.useBy).toBe(T0 + 1_000 + LIMITS.maxGrantTtlMs);
    expect(applyApprovalEvent(state, use(4), T0 + 1_000 + LIMITS.maxGrantTtlMs + 1)).toEqual({ kind: 'rejected', reason: 'past-use-by' });
  });

  it("the log's limits are the longest any writer can use, so they change nothing a guard or the service wrote", () => {
    expect(LOG_LIMITS).toEqual({ maxWaitMs: MAX_APPROVAL_WAIT_MS, maxGrantTtlMs: MAX_GRANT_TTL_MS });
    const state = createApprovalsState(TEST_KEYRING);
    const asked = request(5, T0 + MAX_APPROVAL_WAIT_MS);
    applyApprovalEvent(state, asked, T0);
    applyApprovalEvent(state, decision(5, asked.id, 'approve', T0 + 1_000 + MAX_GRANT_TTL_MS), T0 + 1_000);
    expect(state.approvals.get(idOf(5))?.deadline).toBe(T0 + MAX_APPROVAL_WAIT_MS);
    expect(grantFromApproval(state, idOf(5))?.useBy).toBe(T0 + 1_000 + MAX_GRANT_TTL_MS);
  });
});

describe('a reader that starts at the horizon', () => {
  const RUNS = Number(process.env['GATEHOUSE_HORIZON_RUNS'] ?? 150);
  const SEED = Number(process.env['GATEHOUSE_FUZZ_SEED'] ?? 17);

  it(`grants, from its start on, exactly what a fold of the whole log grants (${RUNS} random logs)`, () => {
    const random = seeded(SEED);
    let compared = 0;
    let granting = 0;
    let cut = 0;
    for (let run = 0; run < RUNS; run += 1) {
      const log = randomApprovalLog(random, 10 + Math.floor(random() * 50), LIMITS, T0);
      const last = log[log.length - 1]?.logTime ?? T0;
      // The reader starts at some instant at or after the last record it finds on the log.
      const start = last + Math.floor(random() ** 3 * LIMITS.maxGrantTtlMs);
      const horizon = approvalHorizon(LIMITS, start);
      const full = createApprovalsState(TEST_KEYRING, LIMITS);
      const bounded = createApprovalsState(TEST_KEYRING, LIMITS);
      for (const { event, logTime } of log) {
        applyApprovalEvent(full, event, logTime);
        if (logTime >= horizon) applyApprovalEvent(bounded, event, logTime);
      }
      if (log[0] !== undefined && log[0].logTime < horizon) cut += 1;
      // Then both read what comes next: every approval used at an instant at or after the start.
      const calls = new Set(log.map(({ event }) => event.payload.approvalId));
      for (let n = 0; calls.has(idOf(n)) || n < 4; n += 1) {
        for (const at of [start, start + Math.floor(random() * LIMITS.maxGrantTtlMs)]) {
          compared += 1;
          const fullUse = applyApprovalEvent(structuredCloneState(full), use(n), at);
          const boundedUse = applyApprovalEvent(structuredCloneState(bounded), use(n), at);
          if (fullUse.kind === 'accepted') granting += 1;
          expect({ run, n, bounded: boundedUse.kind === 'accepted' }).toEqual({ run, n, bounded: fullUse.kind === 'accepted' });
          expect(usable(bounded, n, at)).toBe(usable(full, n, at));
        }
      }
    }
    // The logs must exercise the property, not only compare two empty states.
    process.stdout.write(`horizon property: ${compared} uses compared, ${granting} granted by the whole log, the horizon cut into ${cut} of ${RUNS} logs\n`);
    expect(granting).toBeGreaterThan(RUNS / 10);
    expect(cut).toBeGreaterThan(RUNS / 2);
    expect(compared).toBeGreaterThan(RUNS * 8);
  });
});

/** A copy of a state to try an event on without changing the original (entries are frozen values). */
function structuredCloneState(state: ApprovalsState): ApprovalsState {
  return {
    ...state,
    approvals: new Map(state.approvals),
    history: new Map([...state.history].map(([k, v]) => [k, [...v]])),
    untrusted: { ...state.untrusted },
    forbidden: { ...state.forbidden },
  };
}
