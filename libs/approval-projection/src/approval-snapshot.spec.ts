// Issue 17: the approval service starts from a snapshot of its fold. For random logs (re-requests,
// copied decisions, uses, cancellations, expiries), a start from a snapshot taken after any record
// gives the same verdicts on what follows, and the same state, as the fold of the whole log.
import { describe, expect, it } from '@jest/globals';
import { foldApprovals, LOG_LIMITS } from '@gatehouse/approvals';
import { randomApprovalLog } from '@gatehouse/approvals/testing';
import { seeded, TEST_KEYRING } from '@gatehouse/contracts/testing';
import { firstSnapshotMismatch } from '@gatehouse/kafka/testing';
import { APPROVALS_SNAPSHOT_VERSION, approvalProjection, approvalRetainMsFromEnv, DEFAULT_APPROVAL_RETAIN_MS } from './approval-projection.js';

const T0 = Date.parse('2030-01-01T00:00:00.000Z');
const RUNS = Number(process.env['GATEHOUSE_SNAPSHOT_RUNS'] ?? 60);

describe('the approval fold from a snapshot', () => {
  const fold = approvalProjection(TEST_KEYRING).fold;

  it(`reaches the state and verdicts of the whole log from a snapshot after any record (${RUNS} random logs)`, () => {
    const random = seeded(Number(process.env['GATEHOUSE_FUZZ_SEED'] ?? 17));
    // Short windows: the logs cross deadlines and use-by times as often as the service's do.
    const logs = Array.from({ length: RUNS }, () => randomApprovalLog(random, 5 + Math.floor(random() * 40), { maxWaitMs: 60_000, maxGrantTtlMs: 30_000 }, T0));
    expect(firstSnapshotMismatch(fold, logs)).toBeUndefined();
    // The logs must settle approvals, not only ask.
    const settled = logs.map((log) => [...foldApprovals(log, TEST_KEYRING).approvals.values()].filter((a) => a.status !== 'pending').length);
    expect(settled.reduce((a, b) => a + b, 0)).toBeGreaterThan(RUNS);
  });

  it('keeps the fold limits and keyring of the service, not of the snapshot', () => {
    const state = fold.snapshot?.decode(fold.snapshot.encode(fold.create()));
    expect(state?.limits).toEqual(LOG_LIMITS);
    expect(state?.keyring).toBe(TEST_KEYRING);
    expect(fold.snapshot?.version).toBe(APPROVALS_SNAPSHOT_VERSION);
  });

  it('refuses text that is not a snapshot of the fold', () => {
    for (const text of ['', 'null', '{}', '{"format":2,"maps":{},"counters":{}}', '{"format":1,"maps":{"approvals":[]},"counters":{"untrusted":0,"forbidden":0}}', '{"format":1,"maps":{"approvals":[[1,2]],"history":[]},"counters":{"untrusted":0,"forbidden":0}}', '{"format":1,"maps":{"approvals":[],"history":[]},"counters":{"untrusted":-1,"forbidden":0}}']) {
      expect(() => fold.snapshot?.decode(text)).toThrow();
    }
  });
});

describe('the retention setting', () => {
  it('reads GATEHOUSE_APPROVAL_RETAIN_MS, defaults to 7 days, and refuses anything but a positive whole number of ms', () => {
    expect(approvalRetainMsFromEnv({})).toBe(DEFAULT_APPROVAL_RETAIN_MS);
    expect(approvalRetainMsFromEnv({ GATEHOUSE_APPROVAL_RETAIN_MS: '60000' })).toBe(60_000);
    for (const bad of ['0', '-5', '1.5', 'soon', ' 60000', '1e3']) expect(() => approvalRetainMsFromEnv({ GATEHOUSE_APPROVAL_RETAIN_MS: bad })).toThrow(TypeError);
  });
});
