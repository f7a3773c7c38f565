import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { createHash, randomUUID } from 'node:crypto';
import { topicName } from '@gatehouse/contracts';
import { DEFAULT_KAFKA_PRINCIPALS, kafkaGroupId, kafkaTransactionalId } from '@gatehouse/kafka';
import { joinGroupAs, provisionedNamespace, testKafka, transactAs, waitFor } from '@gatehouse/kafka/testing';
import { type Admin, type Kafka } from 'kafkajs';
import { throwawayDatabase } from '../src/support/database.js';
import { killAll, type Started, startService } from '../src/support/processes.js';
import { authorizerLogMark, deniedSince } from './support/broker-log.js';
import { AgentEvaluations } from './support/evaluations.js';

// Issue 15, attack 4: "consumer groups are shared: every reader may join `gatehouse-policy-*`,
// including the policy service's own evaluator group; an agent joining it stalls every Kafka
// evaluation". Run as the attacker would, holding only the `agent` principal's credentials,
// against the built policy service started as a process: every group of another principal (the
// evaluator's, the service's live tail of the policies log, the old shared names) is refused by
// the broker, which logs the denial; the evaluator's group is untouched and evaluations keep
// being answered.

const AGENT = DEFAULT_KAFKA_PRINCIPALS.agent;
const POLICY = DEFAULT_KAFKA_PRINCIPALS.policy;
const operatorKey = `pk_${randomUUID()}`;
const operators = JSON.stringify([{ id: 'user:ops', role: 'policy-admin', apiKeySha256: createHash('sha256').update(operatorKey).digest('hex'), policySets: '*', publish: true }]);
const BUNDLE = {
  policySetId: 'refunds',
  policies: [
    { id: 'refund-limit', version: '1', priority: 10, match: { tools: ['payments.refund'] }, rules: { denyWhen: 'input.amount > 100' } },
    { id: 'support-may-refund', version: '1', priority: 0, match: { tools: ['payments.refund'] }, rules: { allowWhen: "identity.actor.role == 'support'" } },
  ],
};
const request = (amount: number) => ({ policySetId: 'refunds', identity: { actor: { id: 'user:olga', role: 'support' } }, call: { tool: 'payments.refund' }, input: { amount } });

let kafka: Kafka;
let admin: Admin;
let namespace: string;
let database: { url: string; drop: () => Promise<void> } | undefined;
let policy: Started & { url: string };
let agent: AgentEvaluations | undefined;
/** The group the service's evaluator consumes in (Nest appends `-server`), as the service names it. */
let evaluatorGroup: string;

/** The topics a group's members subscribe to (the consumer protocol's subscription: int16 version, array of strings). */
function subscribedTopics(metadata: Buffer): string[] {
  const topics: string[] = [];
  let at = 2;
  const count = metadata.readInt32BE(at);
  at += 4;
  for (let i = 0; i < count; i += 1) {
    const length = metadata.readInt16BE(at);
    topics.push(metadata.toString('utf8', at + 2, at + 2 + length));
    at += 2 + length;
  }
  return topics;
}

/** The live groups of the policy service's principal whose members read this namespace's topics. */
async function policyServiceGroups(): Promise<Map<string, { state: string; members: string[] }>> {
  const listed = (await admin.listGroups()).groups.map((g) => g.groupId).filter((id) => id.startsWith(`${POLICY}:`));
  const described = listed.length === 0 ? [] : (await admin.describeGroups(listed)).groups;
  const ours = described.filter((g) => g.members.some((m) => subscribedTopics(m.memberMetadata).some((t) => t.startsWith(`${namespace}.`))));
  return new Map(ours.map((g) => [g.groupId, { state: g.state, members: g.members.map((m) => m.memberId).sort() }]));
}

beforeAll(async () => {
  kafka = testKafka('security-consumer-groups');
  admin = kafka.admin();
  await admin.connect();
  namespace = await provisionedNamespace(kafka, 'sec');
  evaluatorGroup = `${kafkaGroupId(POLICY, `policy-evaluator-${namespace}`)}-server`;
  database = await throwawayDatabase('gh_sec');
  policy = await startService('policy', { GATEHOUSE_TOPIC_NAMESPACE: namespace, GATEHOUSE_DATABASE_URL: database.url, GATEHOUSE_POLICY_OPERATORS: operators });
  const published = await fetch(`${policy.url}/v1/policy-sets/refunds/versions`, { method: 'POST', headers: { authorization: `Bearer ${operatorKey}`, 'content-type': 'application/json' }, body: JSON.stringify({ bundle: BUNDLE }) });
  expect(published.status).toBe(201);
  agent = await AgentEvaluations.start(namespace);
  // The positive path before the attack: the evaluator is in its group and answers.
  await waitFor(async () => ((await policyServiceGroups()).get(evaluatorGroup)?.state === 'Stable' ? true : undefined), { timeoutMs: 60_000, what: 'the evaluator group' });
  expect(await agent.ask(request(500))).toMatchObject({ ok: true, decision: { effect: 'deny' } });
}, 120_000);

afterAll(async () => {
  await agent?.close();
  killAll();
  await admin?.disconnect();
  await database?.drop();
});

describe('consumer groups per principal, attacked with the agent principal', () => {
  it("refuses the agent the policy evaluator's group, the service's live tail group and the old shared names; the evaluator is untouched and keeps answering", async () => {
    const before = await policyServiceGroups();
    const evaluator = before.get(evaluatorGroup);
    expect(evaluator).toMatchObject({ state: 'Stable' });
    // Another principal's live group: the service's tail of the policies log (`svc-policy:tail-<uuid>`).
    const tail = [...before.keys()].find((id) => id.startsWith(`${POLICY}:tail-`));
    expect(tail).toBeDefined();
    const mark = authorizerLogMark();

    const requests = topicName('policyEvaluations', namespace);
    const policies = topicName('policies', namespace);
    const attempts: [string, string][] = [
      // Joining it would hand the agent the requests' partitions, which it then never serves: the stall.
      [evaluatorGroup, requests],
      [tail!, policies],
      // The names every reader could join before, and a prefix an agent-per-tenant principal could abuse.
      [`gatehouse-policy-evaluator-${namespace}-server`, requests],
      [`gatehouse-replay-${randomUUID()}`, policies],
      [`${AGENT}-acme:replay-${randomUUID()}`, policies],
    ];
    const answers = await Promise.all(attempts.map(async ([group, topic]) => [group, await joinGroupAs(AGENT, group, topic)]));
    expect(answers).toEqual(attempts.map(([group]) => [group, 'GROUP_AUTHORIZATION_FAILED']));
    // Nor may it fence the service's transactions.
    expect(await transactAs(AGENT, kafkaTransactionalId(POLICY, `probe-${randomUUID()}`))).toBe('TRANSACTIONAL_ID_AUTHORIZATION_FAILED');

    // Reported: the broker logged each refusal with the agent principal and the resource.
    const denied = await waitFor(() => {
      const found = new Set(deniedSince(mark).filter((d) => d.principal === `User:${AGENT}`).map((d) => d.resource));
      return attempts.every(([group]) => found.has(`Group:LITERAL:${group}`)) ? found : undefined;
    }, { timeoutMs: 10_000, what: 'the broker logging the denials' });
    expect(denied.has(`Group:LITERAL:${evaluatorGroup}`)).toBe(true);

    // No state change: the evaluator's group has the same members, no rebalance, and it answers at once.
    const after = await policyServiceGroups();
    expect(after.get(evaluatorGroup)).toEqual(evaluator);
    expect(after.get(tail!)).toEqual(before.get(tail!));
    const started = Date.now();
    expect(await agent!.ask(request(50), 10_000)).toMatchObject({ ok: true, decision: { effect: 'allow' } });
    expect(Date.now() - started).toBeLessThan(10_000);
    expect(policy.child.exitCode).toBeNull();
  });

  it('still lets the agent use groups and transactional ids of its own', async () => {
    expect(await joinGroupAs(AGENT, kafkaGroupId(AGENT, `probe-${randomUUID()}`), topicName('policies', namespace))).toBe('joined');
    expect(await transactAs(AGENT, kafkaTransactionalId(AGENT, `probe-${randomUUID()}`))).toBe('transacted');
  });
});
