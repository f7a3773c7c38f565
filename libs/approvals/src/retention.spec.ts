// Settled state leaves the log (issue 17): the broker deletes the approvals topic's oldest
// segments once they are older than its retention. A fold of what remains must reach what the
// snapshot path (a fold of the whole log, forgetting settled approvals) holds, and answer every
// record from then on the same way.
import { describe, expect, it } from '@jest/globals';
import { TOPICS } from '@gatehouse/contracts';
import { seeded, TEST_KEYRING } from '@gatehouse/contracts/testing';
import { applyApprovalEvent, pruneApprovals } from './fold.js';
import { type ApprovalLimits, approvalLogRetentionMs, type ApprovalsState, createApprovalsState, LOG_LIMITS } from './state.js';
import { randomApprovalLog } from './testing/random-log.js';

const T0 = Date.parse('2030-01-01T00:00:00.000Z');
const LIMITS: ApprovalLimits = { maxWaitMs: 60_000, maxGrantTtlMs: 30_000 };
const RETAIN = 120_000;
const DAY_MS = 24 * 60 * 60 * 1000;

/** What a state holds for its ids (the counters of ignored and forgotten events aside: they count records, not state). */
const held = (state: ApprovalsState) => ({
  approvals: [...state.approvals].sort(([a], [b]) => a.localeCompare(b)),
  history: [...state.history].sort(([a], [b]) => a.localeCompare(b)),
});

describe('the approvals topic keeps what can still change state', () => {
  it('a fold of what retention left reaches the whole log fold, and gives the same verdict on every record from then on (random logs)', () => {
    const random = seeded(Number(process.env['GATEHOUSE_FUZZ_SEED'] ?? 17));
    const retention = approvalLogRetentionMs(LIMITS, RETAIN);
    let cut = 0;
    let compared = 0;
    for (let run = 0; run < 150; run += 1) {
      const log = randomApprovalLog(random, 40 + Math.floor(random() * 160), LIMITS, T0);
      // "Now" falls on a random record: the broker has deleted a prefix of what is older than the retention.
      const j = Math.floor(random() * log.length);
      const now = log[j]?.logTime ?? T0;
      const deletable = log.findIndex((r) => r.logTime >= now - retention);
      const k = Math.floor(random() * (deletable + 1)); // segments go whole: any prefix of the deletable records
      const whole = createApprovalsState(TEST_KEYRING, LIMITS, RETAIN);
      const remaining = createApprovalsState(TEST_KEYRING, LIMITS, RETAIN);
      for (let i = 0; i < log.length; i += 1) {
        const { event, logTime } = log[i] ?? { event: undefined, logTime: 0 };
        if (!event) continue;
        if (i === j) {
          // The start of a reader of what remains: both let go of what settled by now.
          pruneApprovals(whole, () => now);
          pruneApprovals(remaining, () => now);
          expect({ run, ...held(remaining) }).toEqual({ run, ...held(whole) });
        }
        const verdict = applyApprovalEvent(whole, event, logTime);
        if (i < k) continue;
        const again = applyApprovalEvent(remaining, event, logTime);
        if (i >= j) {
          expect({ run, i, verdict: again }).toEqual({ run, i, verdict });
          compared += 1;
        }
      }
      const end = log[log.length - 1]?.logTime ?? T0;
      pruneApprovals(whole, () => end);
      pruneApprovals(remaining, () => end);
      expect({ run, ...held(remaining) }).toEqual({ run, ...held(whole) });
      if (k > 0) cut += 1;
    }
    // The retention did delete records in most logs, and most records came after the cut.
    expect(cut).toBeGreaterThan(75);
    expect(compared).toBeGreaterThan(3_000);
  });

  it('the retention of settled approvals counts twice: with it once, some log reaches another state', () => {
    const random = seeded(Number(process.env['GATEHOUSE_FUZZ_SEED'] ?? 17) + 1);
    const short = LIMITS.maxWaitMs + LIMITS.maxGrantTtlMs + RETAIN;
    let differed = 0;
    for (let run = 0; run < 150 && differed === 0; run += 1) {
      const log = randomApprovalLog(random, 200, LIMITS, T0);
      const now = log[log.length - 1]?.logTime ?? T0;
      const k = log.findIndex((r) => r.logTime >= now - short);
      const whole = createApprovalsState(TEST_KEYRING, LIMITS, RETAIN);
      const remaining = createApprovalsState(TEST_KEYRING, LIMITS, RETAIN);
      log.forEach(({ event, logTime }, i) => {
        applyApprovalEvent(whole, event, logTime);
        if (i >= k) applyApprovalEvent(remaining, event, logTime);
      });
      pruneApprovals(whole, () => now);
      pruneApprovals(remaining, () => now);
      if (JSON.stringify(held(remaining)) !== JSON.stringify(held(whole))) differed += 1;
    }
    expect(differed).toBe(1);
  });

  it('the catalog keeps the approvals topic at least as long as the service fold needs with its default retention of settled approvals', () => {
    const retentionMs = Number(TOPICS.approvals.configs['retention.ms']);
    expect(retentionMs).toBeGreaterThanOrEqual(approvalLogRetentionMs(LOG_LIMITS, 7 * DAY_MS));
    expect(approvalLogRetentionMs(LOG_LIMITS, 7 * DAY_MS)).toBe(51 * DAY_MS);
  });
});
