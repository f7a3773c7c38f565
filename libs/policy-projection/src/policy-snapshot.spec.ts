// Issue 17: the policy service starts from a snapshot of its fold. For random logs of publications
// (new revisions, stale and repeated ones, wrong digests, forged signatures), a start from a
// snapshot taken after any record gives the same verdicts on what follows, and the same state, as
// the fold of the whole log.
import { describe, expect, it } from '@jest/globals';
import { createEvent, PolicyBundlePublishedV1, signEvent, type TopicEvent } from '@gatehouse/contracts';
import { type Random, seeded, TEST_KEYRING, TEST_KEYS, testSigningKey } from '@gatehouse/contracts/testing';
import { firstSnapshotMismatch } from '@gatehouse/kafka/testing';
import { bundleDigest, versionKey } from '@gatehouse/policies';
import { POLICIES_SNAPSHOT_VERSION, policyProjection } from './policy-projection.js';

const RUNS = Number(process.env['GATEHOUSE_SNAPSHOT_RUNS'] ?? 60);
const FORGER = testSigningKey('policy');

function randomPolicyLog(random: Random, length: number): { event: TopicEvent<'policies'>; logTime: number }[] {
  const log: { event: TopicEvent<'policies'>; logTime: number }[] = [];
  let now = Date.parse('2030-01-01T00:00:00.000Z');
  for (let i = 0; i < length; i += 1) {
    now += Math.floor(random() * 5_000);
    const policySetId = `set-${Math.floor(random() * 3)}`;
    const revision = 1 + Math.floor(random() * 6);
    const bundle = { rules: [{ tool: 'payments.refund', maxAmount: Math.floor(random() * 500) }] };
    const digest = random() < 0.9 ? bundleDigest(bundle) : bundleDigest({ other: i });
    const event = createEvent(PolicyBundlePublishedV1, { source: 'service:policy', tenant: 'acme', subject: versionKey(policySetId, revision) }, { policySetId, revision, digest, publishedBy: 'op:1', bundle });
    log.push({ event: signEvent(event, random() < 0.05 ? FORGER : TEST_KEYS.policy), logTime: now });
  }
  return log;
}

describe('the policy fold from a snapshot', () => {
  const fold = policyProjection(TEST_KEYRING).fold;

  it(`reaches the state and verdicts of the whole log from a snapshot after any record (${RUNS} random logs)`, () => {
    const random = seeded(Number(process.env['GATEHOUSE_FUZZ_SEED'] ?? 17));
    const logs = Array.from({ length: RUNS }, () => randomPolicyLog(random, 3 + Math.floor(random() * 25)));
    expect(firstSnapshotMismatch(fold, logs)).toBeUndefined();
    // The logs must reach trusted versions, not only refused publications.
    const whole = fold.create();
    for (const { event, logTime } of logs.flat()) fold.apply(whole, event, logTime);
    expect(whole.versions.size).toBeGreaterThan(5);
    expect(fold.snapshot?.version).toBe(POLICIES_SNAPSHOT_VERSION);
  });
});
