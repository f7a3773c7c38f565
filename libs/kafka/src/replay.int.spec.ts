import { afterAll, beforeAll, expect, it } from '@jest/globals';
import { ApprovalExpiredV1, createEvent } from '@gatehouse/contracts';
import { type Admin, type Kafka } from 'kafkajs';
import { EventProducer } from './producer.js';
import { replayTopic } from './replay.js';
import { tailTopic } from './tail.js';
import { provisionedNamespace, testKafka, waitFor } from './testing/index.js';

let kafka: Kafka;
let namespace: string;
let producer: EventProducer;

beforeAll(async () => {
  kafka = testKafka('replay-int');
  namespace = await provisionedNamespace(kafka);
  producer = await EventProducer.connect(kafka, { namespace });
});

afterAll(async () => {
  await producer?.close();
});

const event = (n: number) => createEvent(ApprovalExpiredV1, { source: 'service:test', tenant: 't', subject: 'one-key' }, { approvalId: `a-${n}`, deadline: new Date().toISOString() });

/** The same client, except that every end-offset snapshot is followed at once by an append. */
function appendingAfterSnapshot(client: Kafka, append: () => Promise<unknown>): Kafka {
  const wrapAdmin = (admin: Admin) =>
    new Proxy(admin, {
      get(target, prop) {
        if (prop === 'fetchTopicOffsets') {
          return async (topic: string) => {
            const offsets = await target.fetchTopicOffsets(topic);
            await append();
            return offsets;
          };
        }
        const value = Reflect.get(target, prop) as unknown;
        return typeof value === 'function' ? (value as (...a: unknown[]) => unknown).bind(target) : value;
      },
    });
  return new Proxy(client, {
    get(target, prop) {
      if (prop === 'admin') return () => wrapAdmin(target.admin());
      const value = Reflect.get(target, prop) as unknown;
      return typeof value === 'function' ? (value as (...a: unknown[]) => unknown).bind(target) : value;
    },
  });
}

it('a replay never reports a position past a record appended after its end snapshot, so a tail from it loses nothing', async () => {
  await producer.publish('approvals', event(1));
  let n = 1;
  const replayed: string[] = [];
  const result = await replayTopic(appendingAfterSnapshot(kafka, () => producer.publish('approvals', event((n += 1)))), 'approvals', {
    namespace,
    onRecord: (r) => void replayed.push(r.event.payload.approvalId),
  });
  expect(replayed).toEqual(['a-1']);
  const tailed: string[] = [];
  const tail = await tailTopic(kafka, 'approvals', { namespace, fromOffsets: result.nextOffsets, onRecord: (r) => void tailed.push(r.event.payload.approvalId) });
  try {
    await waitFor(() => (tailed.length > 0 ? true : undefined), { timeoutMs: 15_000, what: 'the record appended after the snapshot' });
    expect(tailed).toEqual(['a-2']);
  } finally {
    await tail.stop();
  }
});
