import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { createEvent, type DecisionRecorded, isDecisionRecorded, PolicyBundlePublishedV1, signEvent } from '@gatehouse/contracts';
import { TEST_KEYRING, TEST_KEYS, testSigningKey } from '@gatehouse/contracts/testing';
import { EventProducer, replayTopic } from '@gatehouse/kafka';
import { provisionedNamespace, testKafka, waitFor } from '@gatehouse/kafka/testing';
import { bundleDigest } from '@gatehouse/policies';
import { type Kafka } from 'kafkajs';
import { createGatekeeper, followPolicyBundles } from '../index.js';
import { type PublishedBundle, watchPolicyBundles } from './index.js';

let kafka: Kafka;
beforeAll(() => {
  kafka = testKafka('policy-bundles-int');
});

const watchers: { close(): Promise<void> }[] = [];
afterAll(async () => {
  await Promise.all(watchers.map((w) => w.close()));
});

const publication = (revision: number, bundle: Record<string, number | string>) =>
  createEvent(PolicyBundlePublishedV1, { source: 'service:policy', tenant: 'acme', subject: 'refunds' }, { policySetId: 'refunds', revision, digest: bundleDigest(bundle), publishedBy: 'user:ops', bundle });

describe('policy bundles on the real broker', () => {
  it('picks up a signed revision without a restart, ignores a forged one, and reports the forgery', async () => {
    const namespace = await provisionedNamespace(kafka);
    const producer = await EventProducer.connect(kafka, { namespace });
    try {
      await producer.publish('policies', signEvent(publication(1, { maxRefund: 100 }), TEST_KEYS.policy));
      const changes: PublishedBundle[] = [];
      const watcher = await watchPolicyBundles({ kafka, keyring: TEST_KEYRING, namespace, source: 'guard:policies-int', onChange: (b) => void changes.push(b) });
      watchers.push(watcher);
      expect(watcher.current('refunds')).toMatchObject({ revision: 1, bundle: { maxRefund: 100 } });

      // Someone who can write the topic (ACLs keep agents out; a leaked service credential would not) publishes
      // "no limit": unsigned, and signed with a key of its own.
      await producer.publish('policies', publication(2, { maxRefund: 1_000_000 }));
      await producer.publish('policies', signEvent(publication(2, { maxRefund: 1_000_000 }), testSigningKey('policy', 'policy-rogue')));
      await waitFor(() => (watcher.stats().untrusted === 2 ? true : undefined), { what: 'the forgeries read' });
      expect(watcher.current('refunds')).toMatchObject({ revision: 1 });
      const reports = await waitFor(async () => {
        const audit: DecisionRecorded[] = [];
        await replayTopic(kafka, 'audit', { namespace, onRecord: (r) => void (isDecisionRecorded(r.event) && audit.push(r.event)) });
        const hits = audit.filter((e) => e.payload.code === 'SECURITY.UNTRUSTED_GRANT');
        return hits.length === 2 ? hits : undefined;
      }, { what: 'the security events' });
      expect(reports.map((e) => `${e.payload.boundary}:${String(e.payload.attributes?.['untrusted'])}`).sort()).toEqual(['policy:unknown-key', 'policy:unsigned']);

      // The policy service publishes revision 2: it takes effect live.
      await producer.publish('policies', signEvent(publication(2, { maxRefund: 250 }), TEST_KEYS.policy));
      await waitFor(() => (watcher.current('refunds')?.revision === 2 ? true : undefined), { what: 'the new revision' });
      expect(watcher.current('refunds')?.bundle).toEqual({ maxRefund: 250 });
      expect(changes.map((c) => c.revision)).toEqual([2]);
    } finally {
      await producer.close();
    }
  });

  it('a gatekeeper following a watcher that stopped denies every call instead of enforcing its last bundle', async () => {
    const namespace = await provisionedNamespace(kafka);
    const allowAll = { policySetId: 'refunds', policies: [{ id: 'open', version: '1', priority: 1, match: { tools: ['*'] }, rules: { allowWhen: 'true' } }] };
    const producer = await EventProducer.connect(kafka, { namespace });
    try {
      await producer.publish('policies', signEvent(createEvent(PolicyBundlePublishedV1, { source: 'service:policy', tenant: 'acme', subject: 'refunds' }, { policySetId: 'refunds', revision: 1, digest: bundleDigest(allowAll), publishedBy: 'user:ops', bundle: allowAll }), TEST_KEYS.policy));
    } finally {
      await producer.close();
    }
    const gatekeeper = createGatekeeper({ bundle: { policySetId: 'refunds', policies: [] } });
    const follower = followPolicyBundles(gatekeeper, 'refunds');
    const watcher = await watchPolicyBundles({ kafka, keyring: TEST_KEYRING, namespace, onChange: follower.onChange });
    expect(follower.catchUp(watcher)).toEqual({ policySetId: 'refunds', revision: 1 });
    const call = { identity: { agent: 'support-bot' }, call: { tool: 'payments.refund' }, input: { amount: 10 } };
    expect(gatekeeper.evaluate(call).effect).toBe('allow');
    // The watcher stops following the log (closed here; a fatal consumer error stops it the same way).
    await watcher.close();
    expect(watcher.stats().following).toBe(false);
    expect(gatekeeper.evaluate(call)).toMatchObject({ effect: 'deny', fault: 'GATEKEEPER.BUNDLE_UNAVAILABLE', bundle: { policySetId: 'refunds', revision: 1 } });
  });
});
