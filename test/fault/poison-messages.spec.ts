import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { createHash, randomUUID } from 'node:crypto';
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import pg from 'pg';
import { RequestContext } from '@mastra/core/request-context';
import { z } from 'zod';
import { AGENT_AUDIT_CONTEXT_KEY, AuditLogger, CONNECTOR_EXECUTION_CONTEXT_KEY, createConnector, invokeConnector, toDecisionEvent } from '@gatehouse/guard';
import { createKafkaApprovalGateway, type KafkaApprovalGateway } from '@gatehouse/guard/approvals';
import { ApprovalCancelledV1, createEvent, encodeEvent, LedgerRateConsumedV1, PolicyBundlePublishedV1, type TopicId, topicName } from '@gatehouse/contracts';
import { TEST_AGENT_KEY, TEST_KEYRING } from '@gatehouse/contracts/testing';
import { EventConsumer, EventProducer, kafkaGroupId, replayTopic, throwawayGroupId, topicPartitions, topicPartitionsFromEnv } from '@gatehouse/kafka';
import { provisionedNamespace, testKafka, waitFor } from '@gatehouse/kafka/testing';
import { type Kafka, type KafkaMessage, type Producer } from 'kafkajs';
import { auditReader } from '../src/support/audit-reader.js';
import { throwawayDatabase } from '../src/support/database.js';
import { ledgerAgent, ledgerAgentsEnv } from '../src/support/ledger-agent.js';
import { killAll, type Started, startService } from '../src/support/processes.js';

// A poison record on every topic, followed by a valid one: the services that fold a topic park
// the record (counted, kept with its reason in `unapplied_records`, and dead-lettered on
// `gatehouse.dead-letter.v1` for operators) and apply the valid one after it; the library's group
// consumer dead-letters it too; the policy service's Kafka request/reply server answers or drops
// what it cannot serve and keeps serving.
const dir = mkdtempSync(path.join(tmpdir(), 'gatehouse-fault-poison-'));
const reviewerKey = `rk_${randomUUID()}`;
const operatorKey = `pk_${randomUUID()}`;
const sha256 = (s: string) => createHash('sha256').update(s).digest('hex');
const reviewerAuth = { authorization: `Bearer ${reviewerKey}`, 'content-type': 'application/json' };
const operatorAuth = { authorization: `Bearer ${operatorKey}`, 'content-type': 'application/json' };
const reader = auditReader();
// The ledger's caller in the ledger test: an agent key of its own tenant.
const ledgerCaller = ledgerAgent(['acme'], 'agent:poison-test');

let kafka: Kafka;
let namespace: string;
let database: { url: string; drop: () => Promise<void> } | undefined;
let raw: Producer | undefined;
let gateway: KafkaApprovalGateway | undefined;
let approval: Started & { url: string };
let ledger: Started & { url: string };
let policy: Started & { url: string };
let exporter: Started & { url: string };
/** Poison records written to the audit topic, by the audit test. */
let auditPoison = 0;

beforeAll(async () => {
  kafka = testKafka('fault-poison');
  namespace = await provisionedNamespace(kafka, 'fault');
  database = await throwawayDatabase('gh_fault');
  const common = { GATEHOUSE_TOPIC_NAMESPACE: namespace, GATEHOUSE_DATABASE_URL: database.url };
  [approval, ledger, policy, exporter] = await Promise.all([
    startService('approval', { ...common, GATEHOUSE_APPROVAL_REVIEWERS: JSON.stringify([{ id: 'user:rita', role: 'payments-approver', tenants: '*', connectors: '*', apiKeySha256: sha256(reviewerKey) }]) }),
    startService('idempotency-ledger', { ...common, ...ledgerAgentsEnv(ledgerCaller) }),
    startService('policy', { ...common, GATEHOUSE_POLICY_OPERATORS: JSON.stringify([{ id: 'user:ops', role: 'policy-admin', apiKeySha256: sha256(operatorKey), policySets: '*', publish: true }]) }),
    startService('audit-export', { ...common, ...reader.env, GATEHOUSE_EXPORT_FILE_DIR: dir, GATEHOUSE_EXPORT_FROM: 'earliest' }),
  ]);
  // The garbage writer is the super user: it may write every topic, as a broken or hostile producer would have to.
  raw = kafka.producer({ allowAutoTopicCreation: false });
  await raw.connect();
}, 180_000);

afterAll(async () => {
  killAll();
  await gateway?.close().catch(() => undefined);
  await raw?.disconnect().catch(() => undefined);
  await database?.drop();
  rmSync(dir, { recursive: true, force: true });
});

/** A type each topic carries, for garbage that names it but lacks its fields. */
const KNOWN_TYPE: Readonly<Record<string, string>> = { audit: 'DecisionRecorded', approvals: 'ApprovalRequested', ledger: 'LedgerKeyReserved', policies: 'PolicyBundlePublished' };

/** Three kinds of garbage: not JSON, an event type the topic does not carry, a known type with missing fields. */
function garbage(topicId: TopicId): Buffer[] {
  return [Buffer.from([0x00, 0xff, 0x13, 0x37, 0x0a]), Buffer.from(JSON.stringify({ type: 'NotAnEvent', version: 1, id: randomUUID() })), Buffer.from(JSON.stringify({ type: KNOWN_TYPE[topicId], version: 1, id: randomUUID() }))];
}

/** Writes one garbage record to every partition of the topic (so whatever partition the valid record takes, poison precedes it). */
async function poison(topicId: TopicId): Promise<number> {
  const kinds = garbage(topicId);
  const partitions = topicPartitions(topicId, topicPartitionsFromEnv());
  const messages = Array.from({ length: Math.max(partitions, kinds.length) }, (_, i) => ({ partition: i % partitions, key: `poison-${i}`, value: kinds[i % kinds.length] as Buffer }));
  await raw?.send({ topic: topicName(topicId, namespace), acks: -1, messages });
  return messages.length;
}

/** The codes of the records a service's projection keeps as unapplied, once there are `count` of them. */
async function parkedCodes(schema: string, topicId: TopicId, count: number): Promise<Set<string>> {
  const rows = await waitFor(async () => {
    const client = new pg.Client({ connectionString: database?.url });
    await client.connect();
    try {
      const { rows: found } = await client.query(`SELECT code, reason FROM "${schema}".unapplied_records WHERE topic = $1`, [topicName(topicId, namespace)]);
      return found.length === count ? (found as { code: string; reason: string }[]) : undefined;
    } finally {
      await client.end();
    }
  }, { what: `${count} unapplied records of ${topicId} in ${schema}` });
  // The reason is kept with each, never the record's content.
  expect(rows.every((r) => r.reason.length > 0)).toBe(true);
  return new Set(rows.map((r) => r.code));
}

/** Publishes a `refunds` policy set (allowing support to refund up to 100); the HTTP status. */
async function publishRefunds(): Promise<number> {
  const bundle = { policySetId: 'refunds', policies: [{ id: 'limit', version: '1', priority: 10, match: { tools: ['payments.refund'] }, rules: { denyWhen: 'input.amount > 100' } }, { id: 'support', version: '1', priority: 0, match: { tools: ['payments.refund'] }, rules: { allowWhen: "identity.actor.role == 'support'" } }] };
  const res = await fetch(`${policy.url}/v1/policy-sets/refunds/versions`, { method: 'POST', headers: operatorAuth, body: JSON.stringify({ bundle }) });
  await res.body?.cancel();
  return res.status;
}

async function json<T>(url: string, init: RequestInit = {}): Promise<{ status: number; body: T }> {
  const res = await fetch(url, init);
  return { status: res.status, body: (await res.json()) as T };
}

const CONTRACT_CODES = ['CONTRACT.MALFORMED_JSON', 'CONTRACT.UNKNOWN_EVENT_TYPE', 'CONTRACT.INVALID_EVENT'];

/** The service parked each of `count` poison records of `topicId` on the dead-letter topic once, with a code and a reason. */
async function expectDeadLettered(topicId: TopicId, count: number, codes: readonly string[]): Promise<void> {
  const letters = await servicesDeadLetters(topicId, count);
  expect(letters).toHaveLength(count);
  expect(new Set(letters.map((h) => `${h['gatehouse-dlq-partition']}/${h['gatehouse-dlq-offset']}`)).size).toBe(count);
  expect(new Set(letters.map((h) => h['gatehouse-dlq-code']))).toEqual(new Set(codes));
  expect(letters.every((h) => (h['gatehouse-dlq-reason'] ?? '').length > 0)).toBe(true);
}

describe('a poison record on each topic', () => {
  it('audit: the export and the projection park it with its reason and export the valid decision after it', async () => {
    const count = await poison('audit');
    auditPoison = count;
    const producer = await EventProducer.connect(testKafka('fault-poison-agent', 'agent'), { namespace });
    const event = toDecisionEvent(
      { id: randomUUID(), timestamp: new Date().toISOString(), boundary: 'tool', action: 'tool.execute', resource: 'connector:orders.lookup', decision: 'allowed', code: 'CONNECTOR.ALLOWED', reason: 'allowed', context: { tenant: 'acme', runId: 'run-poison' } },
      { source: 'guard:fault-poison', defaultTenant: 'acme' },
    );
    try {
      await producer.publish('audit', event);
    } finally {
      await producer.close();
    }
    // The query API has it (the projection went past the poison)...
    await waitFor(async () => ((await fetch(`${exporter.url}/v1/decisions/${event.id}`, { headers: reader.headers })).status === 200 ? true : undefined), { what: 'the valid decision in the query API', timeoutMs: 30_000, intervalMs: 200 });
    // ...the SIEM file has it (the export went past it)...
    await waitFor(() => (readdirSync(dir).filter((f) => f.startsWith('ocsf')).some((f) => readFileSync(path.join(dir, f), 'utf8').includes(event.id)) ? true : undefined), { what: 'the valid decision in the OCSF file', timeoutMs: 30_000, intervalMs: 200 });
    // ...and every poison record is counted by the export and kept with its reason by the projection.
    // (Each partition's poison is counted when its batch is exported: wait for the last of them.)
    await waitFor(async () => ((await json<{ skipped: number }[]>(`${exporter.url}/v1/exports`, { headers: reader.headers })).body[0]?.skipped === count ? true : undefined), { what: 'the poison counted by the export' });
    expect(await parkedCodes('audit_export', 'audit', count)).toEqual(new Set(CONTRACT_CODES));
    // ...and parked on the dead-letter topic for operators, each once, with its reason.
    await expectDeadLettered('audit', count, CONTRACT_CODES);
    expect(exporter.child.exitCode).toBeNull();
  });

  it('approvals: the service and a waiting guard skip it, and the valid request after it is decided and run', async () => {
    gateway = createKafkaApprovalGateway({ kafka: testKafka('fault-poison-gateway', 'agent'), keyring: TEST_KEYRING, agentKey: TEST_AGENT_KEY, namespace, source: 'guard:fault-poison' });
    await gateway.start();
    const count = await poison('approvals');
    const executed: string[] = [];
    const refund = createConnector({
      id: 'payments.refund',
      description: 'Refund an order',
      inputSchema: z.object({ orderId: z.string() }),
      permissions: { sideEffect: 'write', requiresApproval: true },
      approvals: { gateway, deadlineMs: 120_000, waitMs: 60_000 },
      audit: new AuditLogger(),
      execute: async ({ orderId }) => {
        executed.push(orderId);
        return { refunded: orderId };
      },
    });
    const rc = new RequestContext();
    rc.set(AGENT_AUDIT_CONTEXT_KEY, { tenant: 'acme', agentId: 'refund-bot', runId: 'run-poison' });
    rc.set(CONNECTOR_EXECUTION_CONTEXT_KEY, { workflowId: 'support', runId: 'run-poison' });
    const call = invokeConnector(refund, { orderId: 'o-1' }, { requestContext: rc }).then(
      (value) => ({ ok: true, value }),
      (error: unknown) => ({ ok: false, value: (error as { code?: string }).code }),
    );
    const listed = await waitFor(async () => {
      const page = await json<{ items: { approvalId: string }[] }>(`${approval.url}/v1/approvals?status=pending`, { headers: reviewerAuth });
      return page.body.items[0];
    }, { what: 'the valid request listed', timeoutMs: 30_000, intervalMs: 200 });
    const decided = await fetch(`${approval.url}/v1/approvals/${listed.approvalId}/decision`, { method: 'POST', headers: reviewerAuth, body: JSON.stringify({ verdict: 'approve' }) });
    expect(decided.status).toBe(200);
    expect(await call).toEqual({ ok: true, value: { refunded: 'o-1' } });
    expect(executed).toEqual(['o-1']);

    // The poison on the other partitions is read independently of the request's: wait for all of it.
    const status = await waitFor(async () => {
      const res = await json<{ unappliedRecords: number; approvals: number }>(`${approval.url}/v1/approvals-status`, { headers: reviewerAuth });
      return res.body.unappliedRecords === count ? res.body : undefined;
    }, { what: 'the poison counted by the approval service' });
    expect(status.approvals).toBe(1);
    expect(await parkedCodes('approval', 'approvals', count)).toEqual(new Set(CONTRACT_CODES));
    await expectDeadLettered('approvals', count, CONTRACT_CODES);
    await waitFor(() => (gateway?.stats().poison === count ? true : undefined), { what: 'the poison counted by the guard' });
  });

  it('ledger: the fold parks it, and a reservation and completion after it are answered', async () => {
    const count = await poison('ledger');
    const post = (route: string, body: unknown) => json<Record<string, unknown>>(`${ledger.url}${route}`, { method: 'POST', headers: ledgerCaller.headers, body: JSON.stringify(body) });
    // Keys until every partition had one after its poison: the fold must get past each to answer.
    const partitions = new Set<number>();
    let keys = 0;
    const partitionCount = topicPartitions('ledger', topicPartitionsFromEnv());
    while (partitions.size < partitionCount && keys < 50) {
      keys += 1;
      const key = sha256(`poison-${keys}`);
      const reserved = await post('/v1/idempotency/reservations', { key, connectorId: 'orders.ship', holder: 'h', pendingTtlMs: 60_000 });
      expect(reserved).toMatchObject({ status: 200, body: { status: 'reserved' } });
      expect(await post('/v1/idempotency/completions', { key, leaseToken: reserved.body['leaseToken'], result: { shipped: keys } })).toMatchObject({ status: 200 });
      const view = await json<{ status: string; position: { partition: number } }>(`${ledger.url}/v1/idempotency/keys/${key}`, { headers: ledgerCaller.headers });
      expect(view.body.status).toBe('completed');
      partitions.add(view.body.position.partition);
    }
    expect(partitions.size).toBe(partitionCount);
    const status = await json<{ unappliedRecords: number; keys: number; phase: string }>(`${ledger.url}/v1/ledger/status`);
    expect(status.body).toMatchObject({ phase: 'running', unappliedRecords: count, keys });
    expect(await parkedCodes('ledger', 'ledger', count)).toEqual(new Set(CONTRACT_CODES));
    await expectDeadLettered('ledger', count, CONTRACT_CODES);
  });

  it('policies: the fold parks it, and a publication after it is accepted', async () => {
    const count = await poison('policies');
    // On the compacted topic a record without a value is a tombstone: poison of its own kind.
    await raw?.send({ topic: topicName('policies', namespace), acks: -1, messages: [{ key: 'refunds@1', value: null }] });
    expect(await publishRefunds()).toBe(201);
    const status = await json<{ unappliedRecords: number; versions: number }>(`${policy.url}/v1/policy-status`, { headers: operatorAuth });
    expect(status.body).toMatchObject({ unappliedRecords: count + 1, versions: 1 });
    expect(await parkedCodes('policy', 'policies', count + 1)).toEqual(new Set([...CONTRACT_CODES, 'CONTRACT.EMPTY_RECORD']));
    await expectDeadLettered('policies', count + 1, [...CONTRACT_CODES, 'CONTRACT.EMPTY_RECORD']);
  });

  it('policy-evaluations: the request/reply server answers or drops what it cannot serve, stays up, and answers the valid request after it', async () => {
    // The set the valid request asks about (published by the policies test, unless run alone).
    if ((await fetch(`${policy.url}/v1/policy-sets/refunds/versions`, { headers: operatorAuth })).status === 404) expect(await publishRefunds()).toBe(201);
    const agent = testKafka('fault-poison-evaluations', 'agent');
    const requests = topicName('policyEvaluations', namespace);
    const replyTopic = topicName('policyEvaluationReplies', namespace);
    const replies = new Map<string, unknown>();
    const consumer = agent.consumer({ groupId: kafkaGroupId(agent, `policy-client-${randomUUID()}`), allowAutoTopicCreation: false, maxWaitTimeInMs: 100 });
    const producer = agent.producer({ allowAutoTopicCreation: false });
    await consumer.connect();
    await producer.connect();
    try {
      await consumer.subscribe({ topic: replyTopic, fromBeginning: true });
      await consumer.run({
        eachMessage: async ({ message }: { message: KafkaMessage }) => {
          const id = message.headers?.['kafka_correlationId']?.toString();
          if (id && message.value && !replies.has(id)) replies.set(id, JSON.parse(message.value.toString()));
        },
      });
      const headers = (id: string, to = replyTopic) => ({ kafka_correlationId: id, kafka_replyTopic: to, kafka_replyPartition: '0' });
      const ask = { policySetId: 'refunds', identity: { agent: 'legacy-bot', tenant: 'acme', runId: 'run-poison', actor: { id: 'user:olga', role: 'support' } }, call: { tool: 'payments.refund' }, input: { amount: 50 } };
      await producer.send({
        topic: requests,
        acks: -1,
        messages: [
          // No reply headers: not a request anyone waits for.
          { value: Buffer.from([0x00, 0xff, 0x13, 0x37]) },
          // A request that is not JSON, and one that is JSON but not a request: each gets a coded refusal.
          { value: 'this is not json', headers: headers('garbage-text') },
          { value: JSON.stringify({ policySetId: 'refunds', identity: 'nobody' }), headers: headers('garbage-shape') },
          // A request naming a reply topic that is not the replies topic (another topic of the
          // namespace, and one that does not exist): never answered there.
          { value: JSON.stringify(ask), headers: headers('elsewhere', topicName('audit', namespace)) },
          { value: JSON.stringify(ask), headers: headers('nowhere', `${namespace}.no-such-topic`) },
          // And the valid one after all of them.
          { value: JSON.stringify(ask), headers: headers('valid') },
        ],
      });
      await waitFor(() => (replies.has('valid') ? true : undefined), { what: 'the reply to the valid request', timeoutMs: 30_000, intervalMs: 100 });
      expect(replies.get('valid')).toMatchObject({ ok: true, decision: { effect: 'allow' } });
      expect(replies.get('garbage-text')).toMatchObject({ ok: false, error: { code: 'POLICY.INVALID_REQUEST' } });
      expect(replies.get('garbage-shape')).toMatchObject({ ok: false, error: { code: 'POLICY.INVALID_REQUEST' } });
      expect(replies.has('elsewhere')).toBe(false);
      expect(replies.has('nowhere')).toBe(false);
    } finally {
      await consumer.disconnect();
      await producer.disconnect();
    }
    // Nothing was written to the audit topic in the request's name (the policy service may write
    // there; a reply would be a record no fold can read): what it holds that is not an event is
    // exactly what the audit test put there (the service records no decision asked over Kafka:
    // the asker is not authenticated).
    let notEvents = 0;
    await replayTopic(kafka, 'audit', { namespace, onRecord: () => undefined, onPoison: () => void (notEvents += 1) });
    expect(notEvents).toBe(auditPoison);
    expect(policy.child.exitCode).toBeNull();
    expect((await fetch(`${policy.url}/health`)).status).toBe(200);
  });

  it('every topic: the library consumer dead-letters it with its reason and handles the valid record after it', async () => {
    const topics = ['audit', 'approvals', 'ledger', 'policies'] as const;
    const dlqNamespace = await provisionedNamespace(kafka, 'fault-dlq');
    const deadLetters = await EventProducer.connect(kafka, { namespace: dlqNamespace });
    const handled: string[] = [];
    const consumers: EventConsumer<TopicId>[] = [];
    try {
      for (const topicId of topics) {
        consumers.push(await EventConsumer.start(kafka, { groupId: kafkaGroupId(kafka, `dlq-check-${randomUUID()}`), topicId, namespace: dlqNamespace, deadLetters, handle: async (r) => void handled.push(r.event.id) }));
      }
      const writer = kafka.producer({ allowAutoTopicCreation: false });
      await writer.connect();
      const valid = new Map<TopicId, string>();
      let poisoned = 0;
      try {
        for (const topicId of topics) {
          const kinds = garbage(topicId);
          await writer.send({ topic: topicName(topicId, dlqNamespace), acks: -1, messages: kinds.map((value, i) => ({ partition: 0, key: `poison-${i}`, value })) });
          poisoned += kinds.length;
          // A valid record in the same partition, after the poison.
          const event = validEvent(topicId);
          await writer.send({ topic: topicName(topicId, dlqNamespace), acks: -1, messages: [{ partition: 0, key: event.subject, value: event.value }] });
          valid.set(topicId, event.id);
        }
      } finally {
        await writer.disconnect();
      }
      await waitFor(() => ([...valid.values()].every((id) => handled.includes(id)) ? true : undefined), { what: 'the valid records handled', timeoutMs: 60_000, intervalMs: 100 });
      const parked = await readDeadLetters(dlqNamespace, poisoned);
      expect(parked.map((h) => h['gatehouse-dlq-topic']).sort()).toEqual(topics.flatMap((t) => Array.from({ length: 3 }, () => topicName(t, dlqNamespace))).sort());
      for (const topicId of topics) {
        const codes = parked.filter((h) => h['gatehouse-dlq-topic'] === topicName(topicId, dlqNamespace)).map((h) => h['gatehouse-dlq-code']);
        expect(codes).toEqual(CONTRACT_CODES);
      }
      expect(parked.every((h) => (h['gatehouse-dlq-reason'] ?? '').length > 0 && h['gatehouse-dlq-partition'] === '0')).toBe(true);
    } finally {
      for (const c of consumers) await c.stop().catch(() => undefined);
      await deadLetters.close();
    }
  });
});

/** A valid event of each topic (what a consumer's contract check accepts; signatures are the folds' business). */
function validEvent(topicId: 'audit' | 'approvals' | 'ledger' | 'policies'): { id: string; subject: string; value: Buffer } {
  const meta = { source: 'guard:fault-poison', tenant: 'acme', subject: `valid-${randomUUID()}` };
  switch (topicId) {
    case 'audit': {
      const event = toDecisionEvent({ id: randomUUID(), timestamp: new Date().toISOString(), boundary: 'tool', action: 'tool.execute', resource: 'connector:x', decision: 'allowed', code: 'CONNECTOR.ALLOWED', reason: 'allowed', context: { tenant: 'acme', runId: meta.subject } }, { source: meta.source, defaultTenant: 'acme' });
      return { id: event.id, subject: event.subject, value: encodeEvent('audit', event) };
    }
    case 'approvals': {
      const event = createEvent(ApprovalCancelledV1, meta, { approvalId: meta.subject, by: { id: 'agent:refund-bot', role: 'agent', kind: 'agent' }, reason: 'no longer needed' });
      return { id: event.id, subject: event.subject, value: encodeEvent('approvals', event) };
    }
    case 'ledger': {
      const event = createEvent(LedgerRateConsumedV1, meta, { budgetKey: sha256(meta.subject), claimId: randomUUID(), algorithm: 'fixed-window', count: 5, windowMs: 60_000 });
      return { id: event.id, subject: event.subject, value: encodeEvent('ledger', event) };
    }
    case 'policies': {
      const bundle = { policySetId: 'refunds', policies: [] };
      const event = createEvent(PolicyBundlePublishedV1, meta, { policySetId: 'refunds', revision: 1, digest: sha256('unsigned'), publishedBy: 'user:ops', bundle });
      return { id: event.id, subject: event.subject, value: encodeEvent('policies', event) };
    }
    default: {
      const exhaustive: never = topicId;
      return exhaustive;
    }
  }
}

/** The dead letters the services parked for `topicId` of this spec's namespace, once there are `count`. */
async function servicesDeadLetters(topicId: TopicId, count: number): Promise<Record<string, string>[]> {
  const topic = topicName(topicId, namespace);
  return (await readDeadLetters(namespace, count, (headers) => headers['gatehouse-dlq-topic'] === topic)).filter((h) => h['gatehouse-dlq-topic'] === topic);
}

/** Reads `count` records of the dead-letter topic (those `keep` accepts), returning their headers as strings. */
async function readDeadLetters(ns: string, count: number, keep: (headers: Record<string, string>) => boolean = () => true): Promise<Record<string, string>[]> {
  const found: Record<string, string>[] = [];
  const consumer = kafka.consumer({ groupId: throwawayGroupId(kafka, 'replay'), allowAutoTopicCreation: false, maxWaitTimeInMs: 100 });
  await consumer.connect();
  try {
    await consumer.subscribe({ topic: topicName('deadLetter', ns), fromBeginning: true });
    await consumer.run({ eachMessage: async ({ message }) => void found.push(Object.fromEntries(Object.entries(message.headers ?? {}).map(([k, v]) => [k, String(v)]))) });
    return await waitFor(() => (found.filter(keep).length >= count ? found : undefined), { what: `${count} dead letters`, timeoutMs: 30_000, intervalMs: 100 });
  } finally {
    await consumer.disconnect();
  }
}
