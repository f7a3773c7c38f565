import { afterAll, afterEach, beforeAll, describe, expect, it } from '@jest/globals';
import { checkGrant, type DecisionRecorded, isDecisionRecorded, type TopicEvent, topicName } from '@gatehouse/contracts';
import { TEST_KEYRING } from '@gatehouse/contracts/testing';
import { createGatekeeper, followPolicyBundles } from '@gatehouse/gatekeeper';
import { watchPolicyBundles } from '@gatehouse/gatekeeper/policy-bundles';
import { EventProducer, kafkaConfigFromEnv, kafkaGroupId, replayTopic } from '@gatehouse/kafka';
import { ClientKafka } from '@nestjs/microservices';
import { firstValueFrom } from 'rxjs';
import { kafkaUserEnv, provisionedNamespace, testKafka, waitFor } from '@gatehouse/kafka/testing';
import { compareProjections, openServiceDatabase, rebuildProjection } from '@gatehouse/service-runtime';
import { createTestDatabase, type TestDatabase } from '@gatehouse/service-runtime/testing';
import { policyProjection } from '@gatehouse/policy-projection';
import { type Kafka } from 'kafkajs';
import { bearer, type PolicyApp, startPolicyApp, testOperator } from './testing/policy-app.js';

let kafka: Kafka;
let database: TestDatabase;
const running: { close(): Promise<void> }[] = [];
let schemaCount = 0;

const admin = testOperator('user:ops', { publish: true });
const reader = testOperator('user:auditor');
const other = testOperator('user:other-team', { policySets: ['shipping'], publish: true });
// An agent runtime not written in TypeScript, recording its decisions in one tenant as itself.
const recorder = testOperator('agent:refund-bot', { role: 'support', tenants: ['acme'], agent: 'refund-bot', kind: 'agent' });
// A platform operator recording for two tenants.
const platform = testOperator('user:platform', { role: 'support', tenants: ['acme', 'globex'] });
const OPERATORS = [admin, reader, other, recorder, platform];

beforeAll(async () => {
  kafka = testKafka('policy-service-int-spec');
  database = await createTestDatabase();
});

afterEach(async () => {
  await Promise.all(running.splice(0).map((r) => r.close()));
});

afterAll(async () => {
  await database.drop();
});

async function boot(kafkaEvaluator = false): Promise<{ app: PolicyApp; namespace: string }> {
  schemaCount += 1;
  const namespace = await provisionedNamespace(kafka);
  const app = await startPolicyApp({ namespace, databaseUrl: database.url, schema: `policy_t${schemaCount}`, operators: OPERATORS, kafkaEvaluator });
  running.push(app);
  return { app, namespace };
}

const bundle = (max: number, extra: object[] = []) => ({
  policySetId: 'refunds',
  policies: [
    { id: 'refund-limit', version: '1', priority: 10, match: { tools: ['payments.refund'] }, rules: { denyWhen: `input.amount > ${max}` } },
    { id: 'refunds-by-support', version: '1', priority: 0, match: { tools: ['payments.refund'] }, rules: { allowWhen: "identity.actor.role == 'support'" } },
    ...extra,
  ],
});

const YAML = `policySetId: refunds
policies:
  - id: refund-limit
    version: "2"
    priority: 10
    match:
      tools: ["payments.refund"]
    rules:
      denyWhen: "input.amount > 250"
  - id: refunds-by-support
    version: "1"
    priority: 0
    match:
      tools: ["payments.refund"]
    rules:
      allowWhen: "identity.actor.role == 'support'"
`;

describe('policy service', () => {
  it('validates, versions and publishes signed bundles; lists, shows and diffs them', async () => {
    const { app, namespace } = await boot();
    const first = await app.post('/v1/policy-sets/refunds/versions', { bundle: bundle(100) }, bearer(admin));
    expect(first.status).toBe(201);
    expect(first.body).toMatchObject({ policySetId: 'refunds', revision: 1, publishedBy: 'user:ops', digest: expect.stringMatching(/^[0-9a-f]{64}$/) });
    const second = await app.post('/v1/policy-sets/refunds/versions', { document: YAML }, bearer(admin));
    expect(second.body).toMatchObject({ revision: 2 });

    const sets = await app.get<{ items: { policySetId: string; revision: number }[] }>('/v1/policy-sets', bearer(reader));
    expect(sets.body.items.map((s) => [s.policySetId, s.revision])).toEqual([['refunds', 2]]);
    const versions = await app.get<{ items: { revision: number }[] }>('/v1/policy-sets/refunds/versions', bearer(reader));
    expect(versions.body.items.map((v) => v.revision)).toEqual([1, 2]);
    const v1 = await app.get('/v1/policy-sets/refunds/versions/1', bearer(reader));
    expect((v1.body['bundle'] as { policies: unknown[] }).policies[0]).toMatchObject({ id: 'refund-limit', rules: { denyWhen: 'input.amount > 100' } });
    const diff = await app.get<{ changes: unknown[] }>('/v1/policy-sets/refunds/diff?from=1&to=2', bearer(reader));
    expect(diff.body.changes).toEqual([
      { path: '/policies/refund-limit/rules/denyWhen', op: 'changed', from: 'input.amount > 100', to: 'input.amount > 250' },
      { path: '/policies/refund-limit/version', op: 'changed', from: '1', to: '2' },
    ]);

    // On the log: signed by the policy service, keyed so compaction keeps every version.
    const published: { event: TopicEvent<'policies'>; key: string | null }[] = [];
    await replayTopic(kafka, 'policies', { namespace, onRecord: (r) => void published.push({ event: r.event, key: r.key }) });
    expect(published.map((p) => [p.key, p.event.payload.revision, checkGrant(p.event, TEST_KEYRING).trusted])).toEqual([
      ['refunds@1', 1, true],
      ['refunds@2', 2, true],
    ]);
  });

  it('answers 409 POLICY.CONFLICT to the later of two publications racing for a revision, on two replicas that agree', async () => {
    const { app: first, namespace } = await boot();
    schemaCount += 1;
    const second = await startPolicyApp({ namespace, databaseUrl: database.url, schema: `policy_t${schemaCount}`, operators: OPERATORS });
    running.push(second);
    expect((await first.post('/v1/policy-sets/refunds/versions', { bundle: bundle(100) }, bearer(admin))).status).toBe(201);
    await waitFor(() => (second.engine.current('refunds')?.revision === 1 ? true : undefined), { what: 'the second replica folding revision 1' });
    // Each round: both replicas believe the same revision is next, and publish it at once.
    const statuses: number[] = [];
    for (let round = 0; round < 4; round += 1) {
      const [a, b] = await Promise.all([
        first.post('/v1/policy-sets/refunds/versions', { bundle: bundle(200 + round) }, bearer(admin)),
        second.post('/v1/policy-sets/refunds/versions', { bundle: bundle(300 + round) }, bearer(admin)),
      ]);
      for (const answer of [a, b]) {
        statuses.push(answer.status);
        if (answer.status === 409) expect(answer.body).toMatchObject({ code: 'POLICY.CONFLICT', message: expect.stringMatching(/publish again/) });
        else expect(answer.status).toBe(201);
      }
      const revision = first.engine.current('refunds')?.revision ?? 0;
      await waitFor(() => (second.engine.current('refunds')?.revision === revision ? true : undefined), { what: 'the replicas agreeing' });
    }
    expect(statuses).toContain(409);
    // Every 201 is one revision; no revision was taken twice; both replicas hold the same versions.
    const created = statuses.filter((s) => s === 201).length;
    const listed = async (app: PolicyApp) => (await app.get<{ items: { revision: number; digest: string }[] }>('/v1/policy-sets/refunds/versions', bearer(reader))).body.items;
    const revisions = (await listed(first)).map((v) => v.revision);
    expect(revisions).toEqual(Array.from({ length: created + 1 }, (_, i) => i + 1));
    expect(await listed(second)).toEqual(await listed(first));
  });

  it('refuses invalid bundles with every problem, and operators without the right, changing nothing', async () => {
    const { app } = await boot();
    const invalid = await app.post('/v1/policy-sets/refunds/versions', { bundle: { policySetId: 'refunds', policies: [{ id: 'x' }] } }, bearer(admin));
    expect(invalid.status).toBe(422);
    expect(invalid.body).toMatchObject({ code: 'GATEKEEPER.BUNDLE_INVALID', details: { issues: expect.any(Array) } });
    expect((await app.post('/v1/policy-sets/refunds/versions', { document: 'policies: [unclosed' }, bearer(admin))).status).toBe(422);
    // Schema-valid, but no guard could compile it: refused before it is signed or appended.
    const broken = { policySetId: 'refunds', policies: [{ id: 'limit', version: '1', priority: 1, match: { tools: ['payments.refund'] }, rules: { allowWhen: 'true', denyWhen: 'input.amount > ' } }] };
    const uncompiled = await app.post('/v1/policy-sets/refunds/versions', { bundle: broken }, bearer(admin));
    expect(uncompiled.status).toBe(422);
    expect(uncompiled.body).toMatchObject({ code: 'GATEKEEPER.EXPRESSION_SYNTAX', details: { policyId: 'limit', field: 'rules.denyWhen', position: 15 } });
    const forbidden = { ...broken, policies: [{ ...broken.policies[0], rules: { allowWhen: 'input.constructor == 1' } }] };
    expect((await app.post('/v1/policy-sets/refunds/versions', { bundle: forbidden }, bearer(admin))).body).toMatchObject({ code: 'GATEKEEPER.EXPRESSION_FORBIDDEN_PATH', details: { policyId: 'limit', field: 'rules.allowWhen' } });
    expect((await app.post('/v1/policy-sets/refunds/versions', { bundle: { ...bundle(1), policySetId: 'shipping' } }, bearer(admin))).body).toMatchObject({ code: 'POLICY.INVALID_BUNDLE' });
    expect((await app.post('/v1/policy-sets/refunds/versions', { bundle: bundle(1) }, bearer(reader))).status).toBe(403);
    expect((await app.post('/v1/policy-sets/refunds/versions', { bundle: bundle(1) }, bearer(other))).status).toBe(403);
    expect((await app.post('/v1/policy-sets/refunds/versions', { bundle: bundle(1) })).status).toBe(401);
    expect((await app.get('/v1/policy-sets/refunds/versions', bearer(reader))).status).toBe(404);
    expect(app.engine.status().versions).toBe(0);
  });

  it('is followed by a guard: a new version takes effect there without a restart, and its decisions carry the version', async () => {
    const { app, namespace } = await boot();
    await app.post('/v1/policy-sets/refunds/versions', { bundle: bundle(100) }, bearer(admin));
    // The guard's gatekeeper starts from a bundle of its own and follows the signed log from then on.
    const gatekeeper = createGatekeeper({ bundle: { policySetId: 'refunds', policies: [] } });
    const follower = followPolicyBundles(gatekeeper, 'refunds');
    const watcher = await watchPolicyBundles({ kafka, keyring: TEST_KEYRING, namespace, onChange: follower.onChange });
    running.push(watcher);
    follower.catchUp(watcher);
    expect(watcher.current('refunds')?.revision).toBe(1);
    const refund = (amount: number) => gatekeeper.evaluate({ identity: { agent: 'refund-bot', actor: { id: 'user:olga', role: 'support' } }, call: { tool: 'payments.refund' }, input: { amount } });
    expect(refund(200)).toMatchObject({ effect: 'deny', bundle: { policySetId: 'refunds', revision: 1 } });
    await app.post('/v1/policy-sets/refunds/versions', { bundle: bundle(250) }, bearer(admin));
    await waitFor(() => (watcher.current('refunds')?.revision === 2 ? true : undefined), { what: 'the guard picking up revision 2' });
    expect((watcher.current('refunds')?.bundle as { policies: unknown[] }).policies[0]).toMatchObject({ rules: { denyWhen: 'input.amount > 250' } });
    await waitFor(() => (gatekeeper.version().revision === 2 ? true : undefined), { what: 'the gatekeeper loading revision 2' });
    expect(refund(200)).toMatchObject({ effect: 'allow', bundle: { policySetId: 'refunds', revision: 2 } });
  });

  it('simulates and explains without recording anything, and evaluates with a decision record carrying the version', async () => {
    const { app, namespace } = await boot();
    await app.post('/v1/policy-sets/refunds/versions', { bundle: bundle(100) }, bearer(admin));
    await app.post('/v1/policy-sets/refunds/versions', { bundle: bundle(250) }, bearer(admin));
    const call = { identity: { agent: 'refund-bot', tenant: 'acme', runId: 'run-7', actor: { id: 'user:olga', role: 'support' } }, call: { tool: 'payments.refund' }, input: { amount: 200 } };

    const now = await app.post('/v1/policy-sets/refunds/simulate', call, bearer(reader));
    expect(now.status).toBe(200);
    expect(now.body).toMatchObject({ bundle: { policySetId: 'refunds', revision: 2 } });
    expect(now.body).toMatchObject({ effect: 'allow', policyId: 'refunds-by-support' }); // 200 is under revision 2's limit
    const then = await app.post('/v1/policy-sets/refunds/simulate', { ...call, revision: 1 }, bearer(reader));
    expect(then.body).toMatchObject({ effect: 'deny', policyId: 'refund-limit', ruleId: 'denyWhen', bundle: { revision: 1 } });
    const why = await app.post<{ decision: { effect: string }; policies: { policyId: string; status: string }[] }>('/v1/policy-sets/refunds/explain', { ...call, revision: 1 }, bearer(reader));
    expect(why.body.decision.effect).toBe('deny');
    expect(why.body.policies).toEqual([expect.objectContaining({ policyId: 'refund-limit', status: 'decided' }), expect.objectContaining({ policyId: 'refunds-by-support' })]);
    const audit = async () => {
      const found: DecisionRecorded[] = [];
      await replayTopic(kafka, 'audit', { namespace, onRecord: (r) => void (isDecisionRecorded(r.event) && found.push(r.event)) });
      return found.filter((e) => e.payload.boundary === 'policy');
    };
    expect(await audit()).toEqual([]);

    const evaluated = await app.post('/v1/policy-sets/refunds/evaluate', { ...call, input: { amount: 90417 } }, bearer(recorder));
    expect(evaluated.body).toMatchObject({ effect: 'deny', bundle: { policySetId: 'refunds', revision: 2 }, decisionId: expect.any(String), recorded: true });
    const recorded = await waitFor(async () => {
      const found = await audit();
      return found.length === 1 ? found : undefined;
    }, { what: 'the decision record' });
    expect(recorded[0]?.payload).toMatchObject({ decisionId: evaluated.body['decisionId'], boundary: 'policy', outcome: 'denied', code: 'POLICY.DENY', toolId: 'payments.refund', agentId: 'refund-bot', policy: { bundleId: 'refunds', revision: 2, ruleId: 'denyWhen' } });
    expect(recorded[0]?.tenant).toBe('acme');
    // The amount as a whole number: a timestamp's milliseconds or an id could hold its digits.
    expect(JSON.stringify(recorded)).not.toMatch(/\b90417\b/);
    expect(JSON.stringify(recorded)).not.toContain('amount');
    expect((await app.post('/v1/policy-sets/refunds/evaluate', { ...call, input: { amount: 1 }, identity: { ...call.identity, actor: { id: 'x' } } }, bearer(recorder))).status).toBe(400);
    expect((await app.post('/v1/policy-sets/shipping/simulate', call, bearer(reader))).status).toBe(404);
  });

  it('answers over Kafka request/reply for agents not written in TypeScript, and records none of it: the asker is not authenticated', async () => {
    const { app, namespace } = await boot(true);
    await app.post('/v1/policy-sets/refunds/versions', { bundle: bundle(100) }, bearer(admin));
    // The "agent": any Kafka client speaking NestJS's request/reply headers, here NestJS's own, as the agent principal.
    const config = kafkaConfigFromEnv('policy-eval-agent', { ...process.env, ...kafkaUserEnv('agent') });
    const client = new ClientKafka({
      client: { clientId: config.clientId, brokers: [...config.brokers], ...(config.sasl && { sasl: { mechanism: config.sasl.mechanism, username: config.sasl.username, password: config.sasl.password } as never }) },
      consumer: { groupId: kafkaGroupId(config, `policy-client-${Math.random().toString(36).slice(2, 10)}`), allowAutoTopicCreation: false },
      producer: { allowAutoTopicCreation: false },
    });
    const topic = topicName('policyEvaluations', namespace);
    client.subscribeToResponseOf(topic);
    await client.connect();
    running.push({ close: () => client.close() });
    // It claims a tenant, a run and an actor it could not prove.
    const ask = (amount: number, extra: object = {}) =>
      firstValueFrom(client.send<{ ok: boolean; decision?: { effect: string; bundle: { revision: number }; recorded: boolean; decisionId: string }; error?: { code: string } }>(topic, { policySetId: 'refunds', identity: { agent: 'legacy-bot', tenant: 'globex', runId: 'run-k', actor: { id: 'user:olga', role: 'support' } }, call: { tool: 'payments.refund' }, input: { amount }, ...extra }));
    expect(await ask(500)).toMatchObject({ ok: true, decision: { effect: 'deny', bundle: { revision: 1 }, recorded: false, decisionId: expect.any(String) } });
    expect(await ask(50)).toMatchObject({ ok: true, decision: { effect: 'allow', recorded: false } });
    expect(await ask(1, { policySetId: 'shipping' })).toEqual({ ok: false, error: { code: 'POLICY.NOT_FOUND', message: expect.any(String) } });
    expect(await ask(1, { input: undefined })).toMatchObject({ ok: false, error: { code: 'POLICY.INVALID_REQUEST' } });
    // The replies came after every decision was made: had one been recorded, it would be on the log by now.
    const found: DecisionRecorded[] = [];
    await replayTopic(kafka, 'audit', { namespace, onRecord: (r) => void (isDecisionRecorded(r.event) && found.push(r.event)) });
    expect(found.filter((e) => e.payload.boundary === 'policy')).toEqual([]);
  });
});

describe('recording decisions as the caller, never as the body says (issue 15, attack 5)', () => {
  const call = { identity: { tenant: 'acme' }, call: { tool: 'payments.refund' }, input: { amount: 50 } };
  const policyRecords = async (namespace: string) => {
    const found: DecisionRecorded[] = [];
    await replayTopic(kafka, 'audit', { namespace, onRecord: (r) => void (isDecisionRecorded(r.event) && found.push(r.event)) });
    return found.filter((e) => e.payload.boundary === 'policy');
  };
  /** Records one decision as `recorder` and waits for it: a marker that everything answered before it is on the log too. */
  const marker = async (app: PolicyApp, namespace: string) => {
    const answer = await app.post<{ decisionId: string }>('/v1/policy-sets/refunds/evaluate', call, bearer(recorder));
    expect(answer.status).toBe(200);
    return waitFor(async () => {
      const records = await policyRecords(namespace);
      return records.some((r) => r.payload.decisionId === answer.body.decisionId) ? records : undefined;
    }, { what: 'the marker decision' });
  };

  it('refuses a read-only operator 403 on evaluate and records nothing; it may still simulate and explain', async () => {
    const { app, namespace } = await boot();
    await app.post('/v1/policy-sets/refunds/versions', { bundle: bundle(100) }, bearer(admin));
    for (const operator of [reader, admin]) {
      const refused = await app.post('/v1/policy-sets/refunds/evaluate', call, bearer(operator));
      expect(refused.status).toBe(403);
      expect(refused.body).toMatchObject({ code: 'POLICY.FORBIDDEN', details: { reason: 'read-only' } });
    }
    expect((await app.post('/v1/policy-sets/refunds/simulate', { ...call, identity: { actor: { id: 'user:olga', role: 'support' } } }, bearer(reader))).body).toMatchObject({ effect: 'allow' });
    expect((await app.post('/v1/policy-sets/refunds/explain', call, bearer(reader))).status).toBe(200);
    const records = await marker(app, namespace);
    expect(records).toHaveLength(1);
  });

  it("refuses an operator 403 for another tenant's trail, and records for its own (the only one when none is named)", async () => {
    const { app, namespace } = await boot();
    await app.post('/v1/policy-sets/refunds/versions', { bundle: bundle(100) }, bearer(admin));
    const foreign = await app.post('/v1/policy-sets/refunds/evaluate', { ...call, identity: { tenant: 'globex' } }, bearer(recorder));
    expect(foreign.status).toBe(403);
    expect(foreign.body).toMatchObject({ code: 'POLICY.FORBIDDEN', details: { reason: 'foreign-tenant' } });
    expect(JSON.stringify(foreign.body)).not.toContain('globex');
    // An operator of several tenants names one; an operator of one may leave it out.
    expect((await app.post('/v1/policy-sets/refunds/evaluate', { ...call, identity: {} }, bearer(platform))).body).toMatchObject({ code: 'POLICY.INVALID_REQUEST' });
    const globex = await app.post<{ decisionId: string }>('/v1/policy-sets/refunds/evaluate', { ...call, identity: { tenant: 'globex' } }, bearer(platform));
    const implicit = await app.post<{ decisionId: string }>('/v1/policy-sets/refunds/evaluate', { ...call, identity: {} }, bearer(recorder));
    const records = await marker(app, namespace);
    // Three: the two above and the marker; none for the refused requests.
    expect(records).toHaveLength(3);
    const tenants = new Map(records.map((r) => [r.payload.decisionId, r.tenant]));
    expect([tenants.get(globex.body.decisionId), tenants.get(implicit.body.decisionId)]).toEqual(['globex', 'acme']);
  });

  it("decides and records as the caller: the body's actor, agent and run are not what is decided on or recorded", async () => {
    const { app, namespace } = await boot();
    await app.post('/v1/policy-sets/refunds/versions', { bundle: bundle(100) }, bearer(admin));
    // The body claims an intern (who may not refund) in somebody else's run; the caller is support.
    const claimed = { agent: 'other-bot', tenant: 'acme', runId: 'run-victim', actor: { id: 'user:ceo', role: 'intern' } };
    const answer = await app.post<{ effect: string; decisionId: string; recordedAs: unknown }>('/v1/policy-sets/refunds/evaluate', { ...call, identity: claimed }, bearer(recorder));
    expect(answer.body).toMatchObject({ effect: 'allow', recordedAs: { tenant: 'acme', actor: { id: 'agent:refund-bot', role: 'support', kind: 'agent' }, agentId: 'refund-bot' } });
    const records = await marker(app, namespace);
    const record = records.find((r) => r.payload.decisionId === answer.body.decisionId);
    expect(record).toMatchObject({ source: 'service:policy', tenant: 'acme', subject: answer.body.decisionId, payload: { actor: { id: 'agent:refund-bot', role: 'support', kind: 'agent' }, agentId: 'refund-bot', outcome: 'allowed' } });
    expect(record?.correlationId).toBeUndefined();
    expect(record?.payload.runId).toBeUndefined();
    for (const value of ['other-bot', 'run-victim', 'user:ceo', 'intern']) expect(JSON.stringify(records)).not.toContain(value);
  });

  it('a publication replayed on the log leaves the projection as a rebuild from offset 0 makes it, wherever batches ended', async () => {
    const { app, namespace } = await boot();
    expect((await app.post('/v1/policy-sets/refunds/versions', { bundle: bundle(100) }, bearer(admin))).status).toBe(201);
    // The same signed record appended again (a producer retry past its idempotence window): the fold refuses
    // it, and the live service reads it in a batch of its own, where a rebuild reads both at once.
    const published: TopicEvent<'policies'>[] = [];
    await replayTopic(kafka, 'policies', { namespace, onRecord: (r) => void published.push(r.event) });
    expect(published).toHaveLength(1);
    const producer = await EventProducer.connect(kafka, { namespace });
    try {
      await producer.publish('policies', published[0] as TopicEvent<'policies'>);
    } finally {
      await producer.close();
    }
    await waitFor(() => (app.engine.status().projectedOffsets[0] === '2' ? true : undefined), { what: 'the replayed record projected' });
    const rebuilt = `policy_r${schemaCount}`;
    await rebuildProjection(policyProjection(TEST_KEYRING), { kafka, namespace, database: { url: database.url }, schema: rebuilt });
    const sql = await openServiceDatabase({ url: database.url, schema: rebuilt, migrations: [] });
    try {
      const comparison = await compareProjections(policyProjection(TEST_KEYRING), sql.manager, { liveSchema: `policy_t${schemaCount}`, rebuiltSchema: rebuilt, namespace });
      expect(comparison).toMatchObject({ equal: true, differences: [] });
    } finally {
      await sql.destroy();
    }
  });
});
