import { afterAll, afterEach, beforeAll, describe, expect, it } from '@jest/globals';
import { keyPartitioner, EventProducer, replayTopic, topicPartitions, topicPartitionsFromEnv } from '@gatehouse/kafka';
import { provisionedNamespace, testKafka, waitFor } from '@gatehouse/kafka/testing';
import { type Kafka } from 'kafkajs';
import { createTestDatabase, type TestDatabase } from '@gatehouse/service-runtime/testing';
import { type ApprovalApp, bearer, startApprovalApp, testReviewer } from './testing/approval-app.js';
import { testRequest } from './testing/requests.js';

// Replicas of a scaled-out approval service (GATEHOUSE_SCALE_OUT=partitions) on the real broker
// and PostgreSQL: they share the approvals topic's partitions, a reviewer's decision on an
// approval of the other replica's partition is forwarded to its owner, and each approval is
// decided and expired once.

let kafka: Kafka;
let database: TestDatabase;
const running: ApprovalApp[] = [];
/** The topic's partition count in this run (GATEHOUSE_TOPIC_PARTITIONS, or the catalog's). */
const PARTITIONS = topicPartitions('approvals', topicPartitionsFromEnv());
const producers: EventProducer[] = [];
let schemaCount = 0;
const alice = testReviewer('user:alice');
const bob = testReviewer('user:bob');

beforeAll(async () => {
  kafka = testKafka('approval-scale-out-int-spec');
  database = await createTestDatabase();
});

afterEach(async () => {
  await Promise.all(running.splice(0).map((app) => app.close().catch(() => undefined)));
  await Promise.all(producers.splice(0).map((p) => p.close()));
});

afterAll(async () => {
  await database.drop();
});

async function world(): Promise<{ namespace: string; schema: string; producer: EventProducer }> {
  schemaCount += 1;
  const namespace = await provisionedNamespace(kafka, 'scale');
  const producer = await EventProducer.connect(kafka, { namespace });
  producers.push(producer);
  return { namespace, schema: `approval_so${schemaCount}`, producer };
}

async function replica(w: { namespace: string; schema: string }, name: string, expirySweepMs = 200): Promise<ApprovalApp> {
  const app = await startApprovalApp({ namespace: w.namespace, schema: w.schema, databaseUrl: database.url, reviewers: [alice, bob], replica: name, expirySweepMs });
  running.push(app);
  return app;
}

/** A reviewer's `GET /v1/approval-events` on `app`, read in the background: the event ids it carried so far. */
async function eventStream(app: ApprovalApp): Promise<{ ids(): string[]; text(): string; close(): void }> {
  const controller = new AbortController();
  const response = await fetch(`${app.baseUrl}/v1/approval-events`, { headers: bearer(alice), signal: controller.signal });
  const reader = response.body!.getReader();
  let text = '';
  void (async () => {
    for (;;) {
      const { value, done } = await reader.read();
      if (done) return;
      text += new TextDecoder().decode(value);
    }
  })().catch(() => undefined);
  await waitFor(() => (text.includes('event: ready') ? true : undefined), { what: 'the stream ready' });
  return {
    ids: () => [...text.matchAll(/^id: (\S+)$/gm)].map((m) => m[1]!),
    text: () => text,
    close: () => controller.abort(),
  };
}

const owned = (app: ApprovalApp): number[] =>
  Object.entries((app.engine.status() as unknown as { owned: Record<string, string> }).owned)
    .filter(([, stage]) => stage === 'live')
    .map(([p]) => Number(p))
    .sort((a, b) => a - b);

async function settled(apps: readonly ApprovalApp[]): Promise<number[][]> {
  return waitFor(
    () => {
      const parts = apps.map(owned);
      const all = parts.flat().sort((a, b) => a - b);
      return all.length === PARTITIONS && all.every((p, i) => p === i) && parts.every((p) => p.length > 0) ? parts : undefined;
    },
    { what: 'the partitions split between the replicas', timeoutMs: 60_000, intervalMs: 100 },
  );
}

describe('a scaled-out approval service', () => {
  it('decides every approval once, through whichever replica the reviewer reaches', async () => {
    const w = await world();
    const a = await replica(w, 'approval-a');
    const b = await replica(w, 'approval-b');
    const [ownedA] = await settled([a, b]);
    const partitionOf = keyPartitioner(PARTITIONS);
    const made = Array.from({ length: 12 }, () => testRequest());
    for (const m of made) await w.producer.publish('approvals', m.event);
    // Listed by both (one database), each decided through the replica that does not own it.
    for (const m of made) {
      for (const app of [a, b]) await waitFor(async () => ((await app.get(`/v1/approvals/${m.approvalId}`, bearer(alice))).status === 200 ? true : undefined), { what: 'the request projected' });
      const stranger = ownedA?.includes(partitionOf(m.approvalId)) ? b : a;
      const decided = await stranger.post(`/v1/approvals/${m.approvalId}/decision`, { verdict: 'approve' }, bearer(alice));
      expect({ id: m.approvalId, status: decided.status, body: decided.body['status'] }).toEqual({ id: m.approvalId, status: 200, body: 'approved' });
      // A second decision, through the other replica, is refused: decided once.
      const owner = stranger === a ? b : a;
      const again = await owner.post(`/v1/approvals/${m.approvalId}/decision`, { verdict: 'deny' }, bearer(bob));
      expect({ id: m.approvalId, status: again.status, code: again.body['code'] }).toEqual({ id: m.approvalId, status: 409, code: 'APPROVAL.ALREADY_DECIDED' });
    }
    // Each replica holds only its own partitions' approvals, and together all of them.
    expect((a.engine.status().approvals) + (b.engine.status().approvals)).toBe(made.length);
  });

  it("gives a reviewer's event stream on either replica every replica's changes, each once", async () => {
    const w = await world();
    const a = await replica(w, 'approval-a');
    const b = await replica(w, 'approval-b');
    await settled([a, b]);
    const streams = await Promise.all([a, b].map((app) => eventStream(app)));
    try {
      const made = Array.from({ length: 6 }, () => testRequest());
      for (const m of made) await w.producer.publish('approvals', m.event);
      for (const m of made) {
        await waitFor(async () => ((await a.get(`/v1/approvals/${m.approvalId}`, bearer(alice))).status === 200 ? true : undefined), { what: 'the request projected' });
        expect((await b.post(`/v1/approvals/${m.approvalId}/decision`, { verdict: 'deny' }, bearer(alice))).status).toBe(200);
      }
      const expected = made.flatMap((m) => [`${m.approvalId}:ApprovalRequested`, `${m.approvalId}:ApprovalDecided`]).sort();
      for (const stream of streams) {
        const ids = await waitFor(() => {
          const seen = stream.ids();
          return seen.length >= expected.length ? seen : undefined;
        }, { what: 'every change on the stream', timeoutMs: 20_000 });
        // Each change once, whichever replica folded it; none of the request's content.
        expect([...ids].sort()).toEqual(expected);
        expect(stream.text()).not.toContain('orderId');
      }
    } finally {
      for (const stream of streams) stream.close();
    }
  });

  it('expires each approval once: only the owner of its partition sweeps it', async () => {
    const w = await world();
    const a = await replica(w, 'approval-a', 100);
    const b = await replica(w, 'approval-b', 100);
    await settled([a, b]);
    const made = Array.from({ length: 9 }, () => testRequest({ deadlineMs: 600 }));
    for (const m of made) await w.producer.publish('approvals', m.event);
    for (const m of made) {
      await waitFor(async () => ((await a.get<{ status: string }>(`/v1/approvals/${m.approvalId}`, bearer(alice))).body.status === 'expired' ? true : undefined), {
        what: 'the expiry',
        timeoutMs: 30_000,
      });
    }
    // On the log: one expiry per approval (two replicas sweeping everything appended two).
    const expiries = new Map<string, number>();
    await replayTopic(kafka, 'approvals', { namespace: w.namespace, onRecord: (r) => void (r.event.type === 'ApprovalExpired' && expiries.set(r.event.payload.approvalId, (expiries.get(r.event.payload.approvalId) ?? 0) + 1)) });
    expect(made.map((m) => expiries.get(m.approvalId))).toEqual(made.map(() => 1));
  });
});
