// Bounded memory (issue 17): a settled approval leaves the fold `retainMs` after it settled, by the
// log time of its own records; a sweep that frees memory early changes no verdict.
import { describe, expect, it } from '@jest/globals';
import { seeded, TEST_KEYRING } from '@gatehouse/contracts/testing';
import { applyApprovalEvent, forgetSettled, pruneApprovals, settledAt } from './fold.js';
import { type ApprovalLimits, createApprovalsState } from './state.js';
import { callApprovalId as idOf, callDecision, callRequest, callUse, randomApprovalLog } from './testing/random-log.js';

const T0 = Date.parse('2030-01-01T00:00:00.000Z');
const LIMITS: ApprovalLimits = { maxWaitMs: 60_000, maxGrantTtlMs: 30_000 };
const RETAIN = 120_000;

describe('a settled approval leaves the fold after its retention', () => {
  it('is kept until retainMs after it settled, then forgotten with its history; a later event is about an unknown approval', () => {
    const state = createApprovalsState(TEST_KEYRING, LIMITS, RETAIN);
    const asked = callRequest(1, T0 + 50_000);
    applyApprovalEvent(state, asked, T0);
    applyApprovalEvent(state, callDecision(1, asked.id, 'deny'), T0 + 1_000);
    const approval = state.approvals.get(idOf(1));
    expect(approval && settledAt(approval)).toBe(T0 + 1_000);
    // Within the retention a second decision is refused as such.
    expect(applyApprovalEvent(state, callDecision(1, asked.id, 'approve', T0 + 20_000), T0 + 1_000 + RETAIN)).toEqual({ kind: 'rejected', reason: 'already-decided' });
    // Past it, the approval is gone, and so is its history.
    expect(applyApprovalEvent(state, callDecision(1, asked.id, 'approve', T0 + 200_000), T0 + 2_000 + RETAIN)).toEqual({ kind: 'rejected', reason: 'unknown-approval' });
    expect(state.approvals.has(idOf(1))).toBe(false);
    expect(state.history.get(idOf(1))?.map((h) => h.verdict)).toEqual([{ kind: 'rejected', reason: 'unknown-approval' }]);
    expect(state.pruned.count).toBe(1);
  });

  it('keeps a grant until it was used or its use-by time passed, and a pending request until its deadline, before the retention runs', () => {
    const state = createApprovalsState(TEST_KEYRING, LIMITS, RETAIN);
    const granted = callRequest(2, T0 + 50_000);
    const waiting = callRequest(3, T0 + 50_000);
    applyApprovalEvent(state, granted, T0);
    applyApprovalEvent(state, waiting, T0);
    applyApprovalEvent(state, callDecision(2, granted.id, 'approve', T0 + 25_000), T0 + 1_000);
    const grant = state.approvals.get(idOf(2));
    const pending = state.approvals.get(idOf(3));
    expect(grant && settledAt(grant)).toBe(T0 + 25_000);
    expect(pending && settledAt(pending)).toBe(T0 + 50_000);
    expect(pruneApprovals(state, () => T0 + 25_000 + RETAIN)).toBe(0);
    expect(pruneApprovals(state, () => T0 + 25_001 + RETAIN)).toBe(1);
    expect(state.approvals.has(idOf(3))).toBe(true);
    expect(pruneApprovals(state, () => T0 + 50_001 + RETAIN)).toBe(1);
    expect(state.approvals.size).toBe(0);
  });

  it('takes a request for a forgotten id as new, and a decision copied from the first lifecycle answers nothing', () => {
    const state = createApprovalsState(TEST_KEYRING, LIMITS, RETAIN);
    const first = callRequest(4, T0 + 50_000);
    const approved = callDecision(4, first.id, 'approve', T0 + 20_000);
    applyApprovalEvent(state, first, T0);
    applyApprovalEvent(state, approved, T0 + 1_000);
    applyApprovalEvent(state, callUse(4), T0 + 2_000);
    const later = T0 + 2_001 + RETAIN;
    expect(applyApprovalEvent(state, callRequest(4, later + 50_000), later)).toEqual({ kind: 'accepted' });
    expect(state.approvals.get(idOf(4))?.status).toBe('pending');
    expect(applyApprovalEvent(state, approved, later + 1)).toEqual({ kind: 'rejected', reason: 'other-request' });
  });

  it('forgets nothing without a retention (the default): a fold of the whole log keeps everything', () => {
    const state = createApprovalsState(TEST_KEYRING, LIMITS);
    const asked = callRequest(5, T0 + 50_000);
    applyApprovalEvent(state, asked, T0);
    applyApprovalEvent(state, callDecision(5, asked.id, 'deny'), T0 + 1);
    expect(forgetSettled(state, idOf(5), Number.MAX_SAFE_INTEGER)).toBe(false);
    expect(pruneApprovals(state, () => Number.MAX_SAFE_INTEGER)).toBe(0);
    expect(() => createApprovalsState(TEST_KEYRING, LIMITS, 0)).toThrow(TypeError);
  });

  it('sweeps at any points change no verdict, and leave the state a fold forgetting only by itself reaches (random logs)', () => {
    const random = seeded(Number(process.env['GATEHOUSE_FUZZ_SEED'] ?? 17));
    let forgotten = 0;
    for (let run = 0; run < 100; run += 1) {
      const log = randomApprovalLog(random, 10 + Math.floor(random() * 60), LIMITS, T0);
      const lazy = createApprovalsState(TEST_KEYRING, LIMITS, RETAIN);
      const swept = createApprovalsState(TEST_KEYRING, LIMITS, RETAIN);
      let time = Number.NEGATIVE_INFINITY;
      for (const { event, logTime } of log) {
        const expected = applyApprovalEvent(lazy, event, logTime);
        time = Math.max(time, logTime);
        // One partition: its time is the latest record's. Sweep after about one record in four.
        if (random() < 0.25) pruneApprovals(swept, () => time);
        expect({ run, verdict: applyApprovalEvent(swept, event, logTime) }).toEqual({ run, verdict: expected });
      }
      pruneApprovals(lazy, () => time);
      pruneApprovals(swept, () => time);
      expect({ run, approvals: [...swept.approvals.keys()].sort(), history: [...swept.history.keys()].sort(), pruned: swept.pruned.count }).toEqual({
        run,
        approvals: [...lazy.approvals.keys()].sort(),
        history: [...lazy.history.keys()].sort(),
        pruned: lazy.pruned.count,
      });
      forgotten += lazy.pruned.count;
    }
    expect(forgotten).toBeGreaterThan(100);
  });
});
