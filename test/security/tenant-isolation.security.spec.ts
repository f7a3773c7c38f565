import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { createHash, randomUUID } from 'node:crypto';
import { REFUND_SCHEMA, testRequest } from '@gatehouse/approvals/testing';
import { CONTENT_KEYS_ENV, createContentKeys, isDecisionRecorded, newContentKeyEntry, SIGNING_ENV, trustedEntryOf, type TopicEvent, withContentKeys } from '@gatehouse/contracts';
import { TEST_AGENT_KEY, TEST_KEYRING, TEST_KEYS, testAgentKey, testKeyring } from '@gatehouse/contracts/testing';
import { createKafkaApprovalGateway, type KafkaApprovalGateway } from '@gatehouse/guard/approvals';
import { EventProducer, replayTopic } from '@gatehouse/kafka';
import { provisionedNamespace, testKafka, waitFor } from '@gatehouse/kafka/testing';
import { type Kafka } from 'kafkajs';
import { throwawayDatabase } from '../src/support/database.js';
import { killAll, type Started, startService } from '../src/support/processes.js';

// Issue 15, attack 9, as the attacker runs it: an agent of tenant globex holds the `agent`
// principal's Kafka credentials, so it may read the whole approvals topic. With the tenants'
// content keys configured (acme's agents and the approval service hold acme's; globex's agent
// only globex's), it reads acme's records and learns nothing of what they say of the call.

const SECRET = `s3cret-${randomUUID().slice(0, 8)}`;
const reviewerKey = `rk_${randomUUID()}`;
const reviewers = JSON.stringify([
  { id: 'user:rita', role: 'payments-approver', tenants: ['acme', 'globex'], connectors: ['payments.refund'], apiKeySha256: createHash('sha256').update(reviewerKey).digest('hex') },
]);
const auth = { authorization: `Bearer ${reviewerKey}`, 'content-type': 'application/json' };
const acmeContent = [newContentKeyEntry('acme', 'content-acme-sec')];
const globexContent = [newContentKeyEntry('globex', 'content-globex-sec')];
const globexAgent = testAgentKey('agent:globex-bot', ['globex']);

let kafka: Kafka;
let namespace: string;
let database: { url: string; drop: () => Promise<void> };
let service: Started & { url: string };
let acme: KafkaApprovalGateway;
let globex: KafkaApprovalGateway;

beforeAll(async () => {
  kafka = testKafka('security-tenants');
  namespace = await provisionedNamespace(kafka, 'sec');
  database = await throwawayDatabase();
  service = await startService('approval', {
    GATEHOUSE_TOPIC_NAMESPACE: namespace,
    GATEHOUSE_DATABASE_URL: database.url,
    GATEHOUSE_APPROVAL_REVIEWERS: reviewers,
    [SIGNING_ENV.trustedKeys]: JSON.stringify([...Object.values(TEST_KEYS), TEST_AGENT_KEY, globexAgent].map(trustedEntryOf)),
    // The approval service holds every tenant's content key.
    [CONTENT_KEYS_ENV.keys]: JSON.stringify([...acmeContent, ...globexContent]),
  });
  acme = createKafkaApprovalGateway({ kafka: testKafka('security-acme-agent', 'agent'), keyring: withContentKeys(TEST_KEYRING, createContentKeys(acmeContent)), agentKey: TEST_AGENT_KEY, namespace, source: 'guard:acme' });
  globex = createKafkaApprovalGateway({
    kafka: testKafka('security-globex-agent', 'agent'),
    keyring: withContentKeys(testKeyring(TEST_KEYS.approval, globexAgent), createContentKeys(globexContent)),
    agentKey: globexAgent,
    namespace,
    source: 'guard:globex',
  });
}, 120_000);

afterAll(async () => {
  await acme?.close();
  await globex?.close();
  killAll();
  await database?.drop();
});

/** Every approvals record as the globex agent's principal reads it off the topic. */
async function asGlobexReads(): Promise<TopicEvent<'approvals'>[]> {
  const events: TopicEvent<'approvals'>[] = [];
  await replayTopic(testKafka('security-globex-reader', 'agent'), 'approvals', { namespace, onRecord: (r) => void events.push(r.event) });
  return events;
}

const pending = async () => ((await (await fetch(`${service.url}/v1/approvals?status=pending&limit=200`, { headers: auth })).json()) as { items: { approvalId: string; executionId: string; arguments: unknown; reason: string; dryRunPreview?: unknown }[] }).items;

describe('attack 9: one tenant reading another tenant’s approvals', () => {
  it("acme's request and the reviewer's edits and comment are sealed on the topic; the reviewer and acme's agent see them, globex's agent learns nothing", async () => {
    const runId = `run-${randomUUID().slice(0, 8)}`;
    const request = {
      call: { tenant: 'acme', connectorId: 'payments.refund', executionId: `support/${runId}`, toolCallId: 'call-1' },
      arguments: { orderId: `o-${SECRET}`, amount: 25 },
      dryRunPreview: { wouldRefund: 25, card: `card-${SECRET}` },
      toolDescription: `Refund for ${SECRET}`,
      inputSchema: REFUND_SCHEMA,
      requester: { id: 'agent:refund-bot', role: 'agent', kind: 'agent' as const },
      reason: `refunds need a person (${SECRET})`,
      deadline: new Date(Date.now() + 120_000).toISOString(),
    };
    const waiting = acme.awaitApproval(request, { timeoutMs: 60_000 });
    waiting.catch(() => undefined); // observed now; its outcome is asserted below
    const listed = await waitFor(async () => (await pending()).find((i) => i.executionId === `support/${runId}`), { timeoutMs: 30_000, what: 'the sealed request in the reviewer list' });
    // The reviewer (through the service, which holds acme's key) sees the content.
    expect(listed).toMatchObject({ arguments: { orderId: `o-${SECRET}`, amount: 25 }, reason: `refunds need a person (${SECRET})`, dryRunPreview: { card: `card-${SECRET}` } });
    const res = await fetch(`${service.url}/v1/approvals/${listed.approvalId}/decision`, {
      method: 'POST',
      headers: auth,
      body: JSON.stringify({ verdict: 'approve-with-edits', editedArguments: { orderId: `o-${SECRET}`, amount: 10 }, comment: `only ten, ${SECRET}` }),
    });
    expect(res.status).toBe(200);
    // acme's agent opens the decision: the grant carries the edits.
    await expect(waiting).resolves.toMatchObject({ grant: { editedArguments: { orderId: `o-${SECRET}`, amount: 10 } } });

    // globex's agent reads every record of the topic and finds none of it.
    const raw = await asGlobexReads();
    const about = raw.filter((e) => e.payload.approvalId === listed.approvalId);
    expect(about.map((e) => e.type)).toEqual(['ApprovalRequested', 'ApprovalDecided']);
    expect(JSON.stringify(about)).not.toContain(SECRET);
    expect(about.every((e) => 'sealed' in e.payload)).toBe(true);
    // And its own fold does not know the approval at all.
    await expect(globex.awaitApproval({ ...request, call: { ...request.call, tenant: 'globex' } }, { timeoutMs: 1_000 })).rejects.toMatchObject({ code: 'APPROVAL.TIMEOUT' });
    expect(globex.stats().forbidden).toBe(0);
  });

  it('an agent writing a request of a sealed tenant in clear is ignored and reported; nothing reaches a reviewer', async () => {
    const clear = testRequest({ arguments: { orderId: `o-${SECRET}-clear`, amount: 5 } });
    const producer = await EventProducer.connect(testKafka('security-clear-writer', 'agent'), { namespace });
    try {
      await producer.publish('approvals', clear.event);
    } finally {
      await producer.close();
    }
    const report = await waitFor(
      async () => {
        const events: TopicEvent<'audit'>[] = [];
        await replayTopic(kafka, 'audit', { namespace, onRecord: (r) => void events.push(r.event) });
        return events.filter(isDecisionRecorded).find((e) => e.payload.code === 'SECURITY.FORBIDDEN_CLAIM' && e.payload.attributes?.['eventId'] === clear.event.id);
      },
      { timeoutMs: 30_000, what: 'the report of the clear request' },
    );
    expect(report.payload.attributes).toMatchObject({ claim: 'unsealed' });
    expect((await fetch(`${service.url}/v1/approvals/${clear.approvalId}`, { headers: auth })).status).toBe(404);
  });
});
