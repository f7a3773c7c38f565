import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { randomUUID } from 'node:crypto';
import { topicName } from '@gatehouse/contracts';
import { type AuditEvent, kafkaAuditPublisher, kafkaAuditSink, type KafkaAuditSink } from '@gatehouse/guard';
import { ConfigResourceTypes, EventProducer, replayTopic, topicPartitions, topicPartitionsFromEnv } from '@gatehouse/kafka';
import { provisionedNamespace, waitFor } from '@gatehouse/kafka/testing';
import { type Kafka } from 'kafkajs';
import { OwnCluster } from './support/own-cluster.js';

// The reference deployment: three KRaft nodes, replication 3, min.insync.replicas 2. An agent's
// required audit sink (acks=all) writes the whole time while nodes crash (SIGKILL) and return.
// A decision acknowledged is on two nodes at least, so one crash loses none; with two nodes down
// the cluster cannot keep two copies, so every write fails closed instead of being acknowledged.

let cluster: OwnCluster | undefined;
let admin: Kafka;
let namespace: string;

beforeAll(async () => {
  cluster = await OwnCluster.start('cluster');
  admin = cluster.kafka('scale-admin');
  namespace = await provisionedNamespace(admin, 'scale');
}, 300_000);

afterAll(async () => {
  await cluster?.reset();
}, 120_000);

function decision(n: number): AuditEvent {
  return {
    id: randomUUID(),
    timestamp: new Date().toISOString(),
    boundary: 'tool',
    action: 'tool.execute',
    resource: 'connector:orders.lookup',
    decision: 'allowed',
    code: 'TOOL.ALLOWED',
    reason: 'manifest satisfied',
    // A run per ten decisions: they spread over every partition, so every node leads some.
    context: { tenant: 'acme', agentId: 'scale-bot', runId: `run-${Math.floor(n / 10)}` },
  };
}

describe('the replicated cluster', () => {
  it('gives every catalog topic three replicas and min.insync.replicas 2', async () => {
    const client = admin.admin();
    await client.connect();
    try {
      for (const id of ['audit', 'approvals', 'ledger'] as const) {
        const name = topicName(id, namespace);
        const meta = await client.fetchTopicMetadata({ topics: [name] });
        const partitions = meta.topics[0]?.partitions ?? [];
        expect(partitions).toHaveLength(topicPartitions(id, topicPartitionsFromEnv()));
        expect(partitions.map((p) => p.replicas.length)).toEqual(partitions.map(() => 3));
        const configs = await client.describeConfigs({ includeSynonyms: false, resources: [{ type: ConfigResourceTypes.TOPIC, name }] });
        expect(configs.resources[0]?.configEntries.find((e) => e.configName === 'min.insync.replicas')?.configValue).toBe('2');
      }
    } finally {
      await client.disconnect();
    }
  });

  it('loses no acknowledged decision when a node crashes, and refuses every write while two are down', async () => {
    // The namespace's ACLs reach each node through the metadata log a moment after they are made,
    // and a producer's first request goes to any node: one that has not applied them yet refuses it.
    const producer = await waitFor(
      () =>
        EventProducer.connect(cluster?.kafka('scale-agent', 'agent') as Kafka, { namespace }).catch((error: unknown) => {
          if ((error as { type?: string }).type === 'CLUSTER_AUTHORIZATION_FAILED') return undefined;
          throw error;
        }),
      { what: "the agent's rights in effect on every node", timeoutMs: 30_000, intervalMs: 500 },
    );
    const sink: KafkaAuditSink = kafkaAuditSink({ publisher: kafkaAuditPublisher(producer), mode: 'required', source: 'guard:scale', defaultTenant: 'acme', deliveryTimeoutMs: 3_000 });
    const acknowledged: string[] = [];
    const refused: { at: number; code: string }[] = [];
    let flowing = true;
    let n = 0;
    const traffic = (async () => {
      while (flowing) {
        const event = decision((n += 1));
        try {
          await sink.write(event);
          acknowledged.push(event.id);
        } catch (error) {
          refused.push({ at: acknowledged.length, code: (error as { code?: string }).code ?? 'unknown' });
        }
        await new Promise((r) => setTimeout(r, 20));
      }
    })();
    const acknowledgedSoon = (more: number, what: string) => {
      const target = acknowledged.length + more;
      return waitFor(() => (acknowledged.length >= target ? true : undefined), { what, timeoutMs: 90_000, intervalMs: 50 });
    };
    try {
      await acknowledgedSoon(30, '30 decisions acknowledged on the whole cluster');

      // One node crashes: its partitions get new leaders among the two left, writes go on.
      await cluster?.killNode(1);
      await acknowledgedSoon(30, '30 decisions acknowledged with node 1 down');

      // A second node crashes: one copy is all the cluster could keep, so nothing is acknowledged.
      await cluster?.killNode(2);
      const refusedBefore = refused.length;
      await waitFor(() => (refused.length > refusedBefore ? true : undefined), { what: 'a write refused with two nodes down', timeoutMs: 60_000 });
      const acknowledgedWhileDown = acknowledged.length;
      await waitFor(() => (refused.length >= refusedBefore + 3 ? true : undefined), { what: 'three writes refused with two nodes down', timeoutMs: 60_000 });
      expect(acknowledged.length).toBe(acknowledgedWhileDown);
      expect(new Set(refused.slice(refusedBefore).map((r) => r.code))).toEqual(new Set(['AUDIT.KAFKA_UNAVAILABLE']));

      // Both return: writes go on.
      await cluster?.startNode(1);
      await cluster?.startNode(2);
      await acknowledgedSoon(30, '30 decisions acknowledged after both nodes returned');
    } finally {
      flowing = false;
      await traffic;
      await sink.close().catch(() => undefined);
      await producer.close().catch(() => undefined);
    }

    // Every decision acknowledged over the whole run is on the topic.
    const onTopic = new Set<string>();
    await replayTopic(admin, 'audit', { namespace, timeoutMs: 60_000, onRecord: (r) => void onTopic.add(r.event.id) });
    expect(acknowledged.length).toBeGreaterThanOrEqual(90);
    expect(acknowledged.filter((id) => !onTopic.has(id))).toEqual([]);
  }, 600_000);
});
