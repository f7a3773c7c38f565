import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { randomUUID } from 'node:crypto';
import { createEvent, DecisionRecordedV1, isDecisionRecorded, PolicyBundlePublishedV1, verifyAuditSources } from '@gatehouse/contracts';
import { TEST_KEYRING, TEST_KEYS } from '@gatehouse/contracts/testing';
import { type Kafka } from 'kafkajs';
import { EventProducer, FoldEngine, replayTopic } from './index.js';
import { provisionedNamespace, testKafka, waitFor } from './testing/index.js';

// A service's fold engine with its signing key as `auditKey`, on the real broker: every audit
// record it appends — a decision it records, a security report of a forged grant — is covered by
// a checkpoint it signs, so a verifier counts them as the service's.
let kafka: Kafka;
let namespace: string;
let engine: FoldEngine<'policies', { applied: number }, 'ok'>;

beforeAll(async () => {
  kafka = testKafka('kafka-audit-checkpoints');
  namespace = await provisionedNamespace(kafka, 'ckpt');
  engine = await FoldEngine.start({
    kafka,
    namespace,
    topicId: 'policies',
    fold: { create: () => ({ applied: 0 }), apply: (state) => ((state.applied += 1), 'ok') },
    unavailable: (reason) => new Error(reason),
    untrusted: { keyring: TEST_KEYRING, source: 'service:policy' },
    auditKey: TEST_KEYS.policy,
  });
}, 60_000);

afterAll(async () => {
  await engine?.stop();
});

async function auditLog(): Promise<{ event: unknown; position: string }[]> {
  const out: { event: unknown; position: string }[] = [];
  await replayTopic(kafka, 'audit', { namespace, onRecord: (r) => void out.push({ event: r.event, position: `${r.partition}/${r.offset}` }) });
  return out;
}

describe('a fold engine with an audit key', () => {
  it('covers what it records and what it reports with checkpoints signed by the service key', async () => {
    const recorded = createEvent(DecisionRecordedV1, { source: 'service:policy', tenant: 'acme', subject: 'decision-1' }, { decisionId: randomUUID(), boundary: 'policy', outcome: 'allowed', code: 'POLICY.ALLOW', reason: 'static' });
    await engine.publishTo('audit', recorded);
    // An unsigned bundle from anyone: the engine ignores it and reports it on the audit topic.
    const producer = await EventProducer.connect(kafka, { namespace });
    try {
      const forged = createEvent(PolicyBundlePublishedV1, { source: 'guard:rogue', tenant: 'acme', subject: 'refunds@1' }, { policySetId: 'refunds', revision: 1, digest: 'a'.repeat(64), publishedBy: 'rogue', bundle: {} });
      await producer.publish('policies', forged);
    } finally {
      await producer.close();
    }
    const report = await waitFor(
      async () => {
        const log = await auditLog();
        const decisions = log.filter((r) => isDecisionRecorded(r.event as { type: string }));
        const sources = verifyAuditSources(log, TEST_KEYRING);
        return decisions.length === 2 && sources.verified === 2 ? { log, sources } : undefined;
      },
      { timeoutMs: 20_000, what: 'both records covered by a checkpoint' },
    );
    expect(report.sources).toMatchObject({ ok: true, records: 2, verified: 2, unverified: 0, forbidden: 0 });
    const checkpoints = report.log.filter((r) => (r.event as { type: string }).type === 'AuditChainCheckpoint');
    expect(checkpoints.length).toBeGreaterThanOrEqual(1);
    expect(checkpoints.every((r) => (r.event as { source: string; signature?: { keyId: string } }).signature?.keyId === TEST_KEYS.policy.keyId)).toBe(true);
  });
});
