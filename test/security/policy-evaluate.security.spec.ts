import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { createHash, randomUUID } from 'node:crypto';
import { type DecisionRecorded, isDecisionRecorded } from '@gatehouse/contracts';
import { replayTopic } from '@gatehouse/kafka';
import { provisionedNamespace, testKafka, waitFor } from '@gatehouse/kafka/testing';
import { type Kafka } from 'kafkajs';
import { throwawayDatabase } from '../src/support/database.js';
import { killAll, type Started, startService } from '../src/support/processes.js';
import { AgentEvaluations } from './support/evaluations.js';

// Issue 15, attack 5: "`/evaluate` records the identity in the body: a read-only policy operator
// writes decisions into any tenant's audit trail, as any run and actor". Run as the attacker
// would, with an operator's API key over plain HTTP, or the `agent` principal's Kafka credentials,
// against the built policy service started as a process: a read-only operator records nothing
// (403), an operator of tenant acme nothing in tenant globex (403), a body's actor, agent and run
// are not what is decided on or recorded, and a Kafka request, whose asker the service cannot
// authenticate, is answered and recorded nowhere. Each refusal is logged; the positive path (an
// operator recording for its own tenant, as itself) still works.

const key = () => `pk_${randomUUID()}`;
const digest = (k: string) => createHash('sha256').update(k).digest('hex');
const KEYS = { admin: key(), reader: key(), bot: key() };
const operators = JSON.stringify([
  { id: 'user:ops', role: 'policy-admin', apiKeySha256: digest(KEYS.admin), policySets: '*', publish: true },
  // Read-only: may read, simulate and explain the set; has no tenant to record for.
  { id: 'user:auditor', role: 'policy-reader', apiKeySha256: digest(KEYS.reader), policySets: ['refunds'] },
  // An agent runtime not written in TypeScript, recording in tenant acme as itself.
  { id: 'agent:refund-bot', role: 'support', apiKeySha256: digest(KEYS.bot), policySets: ['refunds'], tenants: ['acme'], agent: 'refund-bot', kind: 'agent' },
]);
const BUNDLE = {
  policySetId: 'refunds',
  policies: [
    { id: 'refund-limit', version: '1', priority: 10, match: { tools: ['payments.refund'] }, rules: { denyWhen: 'input.amount > 100' } },
    { id: 'support-may-refund', version: '1', priority: 0, match: { tools: ['payments.refund'] }, rules: { allowWhen: "identity.actor.role == 'support'" } },
  ],
};
// What an attacker writes in a body: someone else's tenant, run, agent and actor.
const FORGED = { tenant: 'globex', runId: 'run-victim-7', agent: 'globex-payments-bot', actor: { id: 'user:globex-cfo', role: 'support' } };
const CLAIMED_VALUES = ['globex', 'run-victim-7', 'globex-payments-bot', 'user:globex-cfo'];

let kafka: Kafka;
let namespace: string;
let database: { url: string; drop: () => Promise<void> } | undefined;
let policy: Started & { url: string };
let agent: AgentEvaluations | undefined;

async function post(path: string, body: unknown, apiKey: string): Promise<{ status: number; body: Record<string, unknown> }> {
  const res = await fetch(`${policy.url}${path}`, { method: 'POST', headers: { authorization: `Bearer ${apiKey}`, 'content-type': 'application/json' }, body: JSON.stringify(body) });
  return { status: res.status, body: (await res.json()) as Record<string, unknown> };
}

/** The messages the service logged that match `text` (its log lines are JSON). */
function logged(text: string): string[] {
  return policy
    .output()
    .split('\n')
    .flatMap((line) => {
      try {
        return [String((JSON.parse(line) as { message?: unknown }).message)];
      } catch {
        return [];
      }
    })
    .filter((message) => message.includes(text));
}

const evaluate = (identity: object, apiKey: string, amount = 50) => post('/v1/policy-sets/refunds/evaluate', { identity, call: { tool: 'payments.refund' }, input: { amount } }, apiKey);

/** Every decision record on the audit topic, to its end as it is now. */
async function decisionRecords(): Promise<DecisionRecorded[]> {
  const found: DecisionRecorded[] = [];
  await replayTopic(kafka, 'audit', { namespace, onRecord: (r) => void (isDecisionRecorded(r.event) && found.push(r.event)) });
  return found.filter((e) => e.type === 'DecisionRecorded');
}

beforeAll(async () => {
  kafka = testKafka('security-policy-evaluate');
  namespace = await provisionedNamespace(kafka, 'sec');
  database = await throwawayDatabase('gh_sec');
  policy = await startService('policy', { GATEHOUSE_TOPIC_NAMESPACE: namespace, GATEHOUSE_DATABASE_URL: database.url, GATEHOUSE_POLICY_OPERATORS: operators });
  expect((await post('/v1/policy-sets/refunds/versions', { bundle: BUNDLE }, KEYS.admin)).status).toBe(201);
  agent = await AgentEvaluations.start(namespace);
}, 120_000);

afterAll(async () => {
  await agent?.close();
  killAll();
  await database?.drop();
});

describe('/evaluate records as the caller, never as the body says', () => {
  it("answers a read-only operator's /evaluate 403, records nothing on the audit topic, and logs the refusal", async () => {
    const before = await decisionRecords();
    for (const apiKey of [KEYS.reader, KEYS.admin]) {
      const refused = await evaluate(FORGED, apiKey);
      expect(refused).toMatchObject({ status: 403, body: { code: 'POLICY.FORBIDDEN', details: { reason: 'read-only' } } });
      for (const value of CLAIMED_VALUES) expect(JSON.stringify(refused.body)).not.toContain(value);
    }
    // A response comes after the record it would have made: the topic holds none.
    expect(await decisionRecords()).toEqual(before);
    const refusals = await waitFor(() => {
      const lines = logged('refused to record a decision');
      return lines.length >= 2 ? lines.join('\n') : undefined;
    }, { timeoutMs: 10_000, what: 'the refusals in the service log' });
    expect(refusals).toContain('{"code":"POLICY.FORBIDDEN","operator":"user:auditor","reason":"read-only"}');
    expect(refusals).toContain('{"code":"POLICY.FORBIDDEN","operator":"user:ops","reason":"read-only"}');
    for (const value of CLAIMED_VALUES) expect(refusals).not.toContain(value);
    // What a read-only operator may still do: simulate and explain, which record nothing.
    const simulated = await post('/v1/policy-sets/refunds/simulate', { identity: FORGED, call: { tool: 'payments.refund' }, input: { amount: 50 } }, KEYS.reader);
    expect(simulated).toMatchObject({ status: 200, body: { effect: 'allow' } });
    expect((await post('/v1/policy-sets/refunds/explain', { identity: FORGED, call: { tool: 'payments.refund' }, input: { amount: 50 } }, KEYS.reader)).status).toBe(200);
    expect(await decisionRecords()).toEqual(before);
  });

  it("refuses an operator of tenant acme 403 for tenant globex's trail, and records nothing there", async () => {
    const before = await decisionRecords();
    const refused = await evaluate(FORGED, KEYS.bot);
    expect(refused).toMatchObject({ status: 403, body: { code: 'POLICY.FORBIDDEN', details: { reason: 'foreign-tenant' } } });
    expect(await decisionRecords()).toEqual(before);
    expect((await decisionRecords()).filter((e) => e.tenant === 'globex')).toEqual([]);
    const refusal = await waitFor(() => logged('"operator":"agent:refund-bot","reason":"foreign-tenant"')[0], { timeoutMs: 10_000, what: 'the refusal in the service log' });
    expect(refusal).not.toContain('globex');
  });

  it("records a decision as the operator, in its own tenant: the body's actor, agent and run are not what is decided on or recorded", async () => {
    const before = await decisionRecords();
    // The body claims acme (its own tenant) but someone else's run, agent and actor, with a role
    // that may not refund; the operator itself is support.
    const answer = await evaluate({ ...FORGED, tenant: 'acme', actor: { id: 'user:globex-cfo', role: 'intern' } }, KEYS.bot);
    expect(answer).toMatchObject({ status: 200, body: { effect: 'allow', recorded: true, recordedAs: { tenant: 'acme', actor: { id: 'agent:refund-bot', role: 'support', kind: 'agent' }, agentId: 'refund-bot' } } });
    const decisionId = answer.body['decisionId'] as string;
    const records = await decisionRecords();
    const added = records.filter((e) => !before.some((b) => b.id === e.id));
    expect(added).toHaveLength(1);
    expect(added[0]).toMatchObject({ source: 'service:policy', tenant: 'acme', subject: decisionId, payload: { decisionId, boundary: 'policy', outcome: 'allowed', actor: { id: 'agent:refund-bot', role: 'support', kind: 'agent' }, agentId: 'refund-bot' } });
    expect(added[0]?.correlationId).toBeUndefined();
    expect(added[0]?.payload.runId).toBeUndefined();
    for (const value of [...CLAIMED_VALUES, 'intern']) expect(JSON.stringify(records)).not.toContain(value);
  });

  it('answers an evaluation asked over Kafka with the agent principal, whatever identity it claims, and records it nowhere', async () => {
    const before = await decisionRecords();
    const reply = await agent!.ask({ policySetId: 'refunds', identity: FORGED, call: { tool: 'payments.refund' }, input: { amount: 500 } });
    expect(reply).toMatchObject({ ok: true, decision: { effect: 'deny', recorded: false } });
    // The reply is sent after the decision is made; had it been recorded, it would be on the log.
    const after = await decisionRecords();
    expect(after).toEqual(before);
    expect(after.filter((e) => e.source === 'service:policy' && e.tenant === 'globex')).toEqual([]);
    expect(policy.child.exitCode).toBeNull();
  });
});
