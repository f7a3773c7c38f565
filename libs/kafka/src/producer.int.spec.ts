import { afterEach, beforeAll, describe, expect, it } from '@jest/globals';
import { randomUUID } from 'node:crypto';
import { createEvent, DecisionRecordedV1 } from '@gatehouse/contracts';
import { type Kafka } from 'kafkajs';
import { EventProducer, replayTopic, TransactionalEventProducer } from './index.js';
import { LostAnswers, lossyTestKafka, provisionedNamespace, testKafka } from './testing/index.js';

// An append whose answer was lost is on the log, and its sender was told it failed. kafkajs then
// hands the batch's sequence numbers back, and the broker takes the next batch of the same size
// for a retry of the lost one: acknowledged with the first one's offsets, never appended. A
// required audit write would be acknowledged and lost. These tests lose the answer on purpose.

let admin: Kafka;
const open: { close(): Promise<void> }[] = [];

beforeAll(() => {
  admin = testKafka('producer-int-spec');
});

afterEach(async () => {
  await Promise.all(open.splice(0).map((p) => p.close().catch(() => undefined)));
});

/** One run's decisions share a key, so a partition: the broker judges their sequence numbers together. */
function decision(code: string) {
  return createEvent(DecisionRecordedV1, { source: 'guard:test', tenant: 'acme', subject: 'run-lost-answer' }, {
    decisionId: randomUUID(),
    boundary: 'tool',
    outcome: 'allowed',
    code,
    reason: 'manifest satisfied',
  });
}

async function codesOnTopic(namespace: string): Promise<string[]> {
  const codes: string[] = [];
  await replayTopic(admin, 'audit', { namespace, onRecord: (r) => void codes.push((r.event.payload as { code: string }).code) });
  return codes;
}

describe('an append whose acknowledgement was lost', () => {
  it('is never confused with the next append: every acknowledged event is on the topic', async () => {
    const namespace = await provisionedNamespace(admin, 'lost');
    const lost = new LostAnswers();
    const producer = await EventProducer.connect(lossyTestKafka('lost-answer', lost), { namespace });
    open.push(producer);
    await producer.publish('audit', decision('FIRST'));

    lost.loseNextProduceAnswers(2);
    await expect(producer.publish('audit', decision('ANSWER.LOST'))).rejects.toThrow();
    expect(lost.lost).toBe(2);
    // Acknowledged, both of them: the first is as long as the lost one, the second is not.
    await producer.publish('audit', decision('AFTER'));
    await producer.publishMany('audit', [decision('AFTER.A'), decision('AFTER.B')]);

    // The lost one is on the log too (the broker appended it): at least once, never less.
    expect(await codesOnTopic(namespace)).toEqual(['FIRST', 'ANSWER.LOST', 'AFTER', 'AFTER.A', 'AFTER.B']);
  });

  it('loses nothing when appends were queued behind the one that failed', async () => {
    const namespace = await provisionedNamespace(admin, 'lost');
    const lost = new LostAnswers();
    const producer = await EventProducer.connect(lossyTestKafka('lost-answer-queued', lost), { namespace });
    open.push(producer);
    await producer.publish('audit', decision('FIRST'));

    lost.loseNextProduceAnswers(2);
    const failing = producer.publish('audit', decision('ANSWER.LOST'));
    // Sent while the first is in flight: they wait for it, and go out after it failed.
    const queued = ['QUEUED.1', 'QUEUED.2', 'QUEUED.3'].map((code) => producer.publish('audit', decision(code)));
    await expect(failing).rejects.toThrow();
    // Each is acknowledged and on the topic, in the order they were sent.
    await Promise.all(queued);
    expect(await codesOnTopic(namespace)).toEqual(['FIRST', 'ANSWER.LOST', 'QUEUED.1', 'QUEUED.2', 'QUEUED.3']);
  });

  it('never lets a transaction commit a lost batch in place of its own', async () => {
    const namespace = await provisionedNamespace(admin, 'lost');
    const lost = new LostAnswers();
    const tx = await TransactionalEventProducer.connect(lossyTestKafka('lost-answer-tx', lost), `lost-${namespace}`, { namespace });
    open.push(tx);
    lost.loseNextProduceAnswers(2);
    await expect(tx.run(async (scope) => scope.publish('audit', decision('ABORTED')))).rejects.toThrow();
    await tx.run(async (scope) => scope.publish('audit', decision('COMMITTED')));

    // A read-committed replay: the aborted batch is gone, the committed one is there.
    expect(await codesOnTopic(namespace)).toEqual(['COMMITTED']);
  });
});

describe('concurrent appends', () => {
  it('share requests, and each writer learns the offset its own event landed at', async () => {
    const namespace = await provisionedNamespace(admin, 'group');
    const counting = new LostAnswers();
    const producer = await EventProducer.connect(lossyTestKafka('group-commit', counting), { namespace });
    open.push(producer);
    await producer.publish('audit', decision('WARM-UP'));
    const before = counting.produceRequests;
    // Fifty writers at once, over three runs (so three keys, spread over the partitions).
    const events = Array.from({ length: 50 }, (_, i) =>
      createEvent(DecisionRecordedV1, { source: 'guard:test', tenant: 'acme', subject: `run-${i % 3}` }, { decisionId: randomUUID(), boundary: 'tool', outcome: 'allowed', code: `C${i}`, reason: 'manifest satisfied' }),
    );
    const landed = await Promise.all(events.map((event) => producer.publish('audit', event)));
    expect(counting.produceRequests - before).toBeLessThan(events.length / 2);

    const onTopic = new Map<string, string>();
    await replayTopic(admin, 'audit', { namespace, onRecord: (r) => void onTopic.set(r.event.id, `${r.partition}/${r.offset}`) });
    expect(events.map((event) => onTopic.get(event.id))).toEqual(landed.map((l) => `${l.partition}/${l.offset}`));
  });
});

