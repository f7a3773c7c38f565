import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { createHash, randomUUID } from 'node:crypto';
import { topicName } from '@gatehouse/contracts';
import { TEST_KEYRING } from '@gatehouse/contracts/testing';
import { parseGatekeeperBundle } from '@gatehouse/guard/gatekeeper';
import { type PolicyBundleWatcher, watchPolicyBundles } from '@gatehouse/guard/policy-bundles';
import { kafkaGroupId } from '@gatehouse/kafka';
import { provisionedNamespace, testKafka, waitFor } from '@gatehouse/kafka/testing';
import fc from 'fast-check';
import { type Consumer, type Kafka } from 'kafkajs';
import { throwawayDatabase } from '../src/support/database.js';
import { killAll, type Started, startService } from '../src/support/processes.js';
import { approvalBases, bundleOf, decisionRecorded, forgedPolicyGrants, ledgerBases, policyBases } from './support/events.js';
import { derivedSeed, FUZZ_RUNS, fuzzSeed, samples } from './support/fuzz-run.js';
import { type RouteFuzz } from './support/http-fuzz.js';
import { CANARY, deepNesting, type FieldSpec, jsonText, junkJson, junkString, malformedJsonText, notIntegerIn, notOneOf, type ObjectSpec, RawJson, wrongType } from './support/http-inputs.js';
import { getJson, produceRaw, tally } from './support/kafka-fuzz.js';
import { type KafkaInput, junkRecordHeaders, poisonRecords } from './support/kafka-inputs.js';
import { authOnlyRoute, bodyRoute, type Credentials, fixedPath, HEALTH_RUNS, healthReport, inputlessRoute, jsonObject, junkPaths, pathRoute, queryRoute } from './support/routes.js';
import { aliveAndHealthy, describeRestFuzz } from './support/service.js';
import { appended, auditCodes, Database, deadLettered, expectPoisonCounted, grown, TopicEnds } from './support/state.js';

// Malformed input at every route of the policy service, at both consumers of the policies topic
// (the service's fold and the guard's bundle watcher) and at the service's Kafka request/reply
// evaluator: typed refusals, a live service, no state changed; poison kept and parked once on the
// dead-letter topic, forged bundles ignored and reported; and a version published after the
// garbage still reaches the guard, an evaluation asked after it is still answered.

const seed = fuzzSeed('policy');
const CODES = /^(POLICY|HTTP|GATEKEEPER)\.[A-Z_]+$/;
const SET = 'refunds';
const adminKey = `pk_${randomUUID()}`;
const readerKey = `pk_${randomUUID()}`;
const botKey = `pk_${randomUUID()}`;
const digest = (key: string) => createHash('sha256').update(key).digest('hex');
const operators = JSON.stringify([
  { id: 'op:ada', role: 'policy-admin', apiKeySha256: digest(adminKey), policySets: '*', publish: true },
  { id: 'op:rex', role: 'policy-reader', apiKeySha256: digest(readerKey), policySets: [SET], publish: false },
  // The one that may record (evaluate), in one tenant; the other two are read-only there (403).
  { id: 'agent:refund-bot', role: 'support', apiKeySha256: digest(botKey), policySets: [SET], tenants: ['acme'], agent: 'refund-bot', kind: 'agent' },
]);
const admin = { authorization: `Bearer ${adminKey}` };
// All authenticate; the reader and the bot may not publish, nor touch any set but one; only the bot may evaluate.
const credentials: Credentials = { valid: [`Bearer ${adminKey}`, `Bearer ${readerKey}`, `Bearer ${botKey}`], material: { validKey: adminKey } };

let kafka: Kafka;
let agentKafka: Kafka;
let namespace: string;
let database: { url: string; drop: () => Promise<void> };
let db: Database;
let ends: TopicEnds;
let service: Started & { url: string };
let watcher: PolicyBundleWatcher;

async function publish(maxAmount: number): Promise<{ status: number; revision: number }> {
  const res = await fetch(`${service.url}/v1/policy-sets/${SET}/versions`, { method: 'POST', headers: { ...admin, 'content-type': 'application/json' }, body: JSON.stringify({ bundle: bundleOf(SET, maxAmount) }) });
  return { status: res.status, revision: ((await res.json()) as { revision: number }).revision };
}

beforeAll(async () => {
  kafka = testKafka('fuzz-policy');
  agentKafka = testKafka('fuzz-policy-agent', 'agent');
  namespace = await provisionedNamespace(kafka, 'fuzz');
  database = await throwawayDatabase('gh_fuzz');
  db = new Database(database.url);
  ends = new TopicEnds(kafka, namespace);
  service = await startService('policy', { GATEHOUSE_TOPIC_NAMESPACE: namespace, GATEHOUSE_DATABASE_URL: database.url, GATEHOUSE_POLICY_OPERATORS: operators });
  expect(await publish(100)).toEqual({ status: 201, revision: 1 });
  // The guard's follower of the policies log, as an agent process runs it.
  watcher = await watchPolicyBundles({ kafka: agentKafka, keyring: TEST_KEYRING, namespace, source: 'guard:fuzz-policies' });
}, 120_000);

afterAll(async () => {
  await watcher?.close();
  killAll();
  await ends?.close();
  await db?.close();
  await database?.drop();
});

async function snapshot() {
  const status = await getJson<Record<string, unknown>>(`${service.url}/v1/policy-status`);
  return {
    topics: await ends.of(['policies', 'audit', 'deadLetter', 'policyEvaluationReplies']),
    database: await db.digest('policy'),
    sets: await getJson<unknown>(`${service.url}/v1/policy-sets`, admin),
    versions: await getJson<unknown>(`${service.url}/v1/policy-sets/${SET}/versions`, admin),
    fold: { sets: status['policySets'], versions: status['versions'], unapplied: status['unappliedRecords'], untrusted: status['untrustedGrants'], applied: status['appliedOffsets'] },
  };
}

/** Whether the service would publish `bundle` at `/v1/policy-sets/{setId}/versions` (the test's oracle is the guard's own parser). */
function publishable(bundle: unknown, setId: string): boolean {
  try {
    return parseGatekeeperBundle(bundle instanceof RawJson ? JSON.parse(bundle.text) : bundle).policySetId === setId;
  } catch {
    // Schema errors, and a stack overflow on deep nesting: refused either way.
    return false;
  }
}

const policy = (overrides: Record<string, unknown>) => ({ ...(bundleOf(SET, 1).policies as object[])[0], ...overrides });

/** Bundles the gatekeeper's schema refuses: wrong shapes, bad policies, duplicate ids, hostile conditions, deep arguments. */
const badBundle = fc
  .oneof(
    wrongType('object'),
    fc.record({ policySetId: fc.oneof(junkString(), wrongType('string')), policies: fc.constant([]) }),
    fc.record({ policySetId: fc.constant(SET), policies: wrongType('array') }),
    fc.record({ policySetId: fc.constant(SET), policies: fc.array(junkJson(), { minLength: 1, maxLength: 3 }) }),
    fc.record({ policySetId: fc.constant(SET), policies: fc.constant([policy({}), policy({})]) }),
    fc.record({
      policySetId: fc.constant(SET),
      policies: fc.tuple(
        fc.oneof(
          fc.record({ priority: notIntegerIn(-1_000_000, 1_000_000) }).map(policy),
          fc.record({ id: fc.oneof(fc.constant(''), junkString()) }).map(policy),
          fc.record({ rules: fc.oneof(fc.constant({}), wrongType('object'), fc.record({ denyWhen: fc.oneof(fc.constant(''), fc.integer({ min: 2_001, max: 4_000 }).map((n) => 'x'.repeat(n))) })) }).map(policy),
          fc.record({ rules: fc.record({ rewrite: fc.record({ set: fc.constantFrom({ __proto__x: 1 }, { 'a.__proto__': 1 }, { 'constructor.x': 1 }, {}) }) }) }).map(policy),
          fc.record({ match: fc.oneof(wrongType('object'), fc.record({ tools: fc.constantFrom([], ['a*b'], [' x'], ['*', '**']) })) }).map(policy),
          // A predicate whose arguments nest past what the schema's recursion can walk.
          deepNesting(10_000).map((deep) => policy({ rules: { allowWhen: { predicate: 'p', args: [deep] } } })),
          fc.record({ extra: junkJson() }).map(policy),
        ),
      ),
    }),
    fc.record({ policySetId: fc.constant(SET), policies: fc.constant([]), [`x${CANARY}`]: junkJson() }),
  )
  .filter((b) => !publishable(b, SET));

/** Documents (YAML or JSON text) the parser refuses. */
const badDocument = fc
  .oneof(
    malformedJsonText(),
    fc.constantFrom('policies: [unclosed', 'a: &a [*a]', 'policySetId: refunds\npolicySetId: refunds\npolicies: []', '- just\n- a list', '!!js/function "x"', 'policySetId: refunds\npolicies: {}', `${'[' .repeat(20_000)}`),
    // Many aliases of aliases: what a billion-laughs document looks like (the parser caps aliases).
    fc.integer({ min: 101, max: 400 }).map((n) => `a: &a [x]\nb: [${Array.from({ length: n }, () => '*a').join(', ')}]\npolicySetId: refunds\npolicies: []`),
    junkString({ maxLength: 2_000 }),
  )
  .filter((d) => d.length > 0 && !publishable(d, SET));

const PUBLISH: ObjectSpec = { strict: true, fields: { bundle: { valid: bundleOf(SET, 5), required: true, invalid: badBundle } } };

const identity = { agent: 'refund-bot', tenant: 'acme', actor: { id: 'user:olga', role: 'support' }, runId: 'run-fuzz' };
const DECIDE: ObjectSpec = {
  strict: true,
  fields: {
    identity: {
      valid: identity,
      required: true,
      invalid: fc.oneof(
        wrongType('object'),
        fc.record({ agent: fc.oneof(fc.constant(''), wrongType('string')) }).map((o) => ({ ...identity, ...o })),
        fc.record({ actor: fc.oneof(wrongType('object'), fc.constant({ id: 'x' }), fc.constant({ id: 'x', role: 'r', kind: 'human' })) }).map((o) => ({ ...identity, ...o })),
        fc.record({ environment: fc.integer({ min: 65, max: 300 }).map((n) => 'e'.repeat(n)) }).map((o) => ({ ...identity, ...o })),
        fc.record({ grants: junkJson() }).map((o) => ({ ...identity, ...o })),
      ),
    },
    call: { valid: { tool: 'payments.refund' }, required: true, invalid: fc.oneof(wrongType('object'), fc.constant({ tool: '' }), fc.constant({}), fc.constant({ tool: 'x', args: {} })) },
    // Any JSON is a valid input; only nesting past what the validator can walk is not.
    input: { valid: { amount: 5 }, required: true, invalid: deepNesting(10_000), rare: true },
    revision: { valid: 1, required: false, invalid: fc.oneof(notIntegerIn(1, Number.MAX_SAFE_INTEGER), fc.constant('1')) },
    mode: { valid: 'audit', required: false, invalid: notOneOf(['enforce', 'audit', 'disabled']) },
  } satisfies Record<string, FieldSpec>,
};

const revisionText = (ok: (n: number) => boolean): FieldSpec => ({
  valid: '1',
  required: true,
  invalid: fc.oneof(junkString({ maxLength: 30 }), fc.constantFrom('0', '-1', '1.5', 'NaN', 'Infinity', '1e400')).filter((s) => s.trim() !== '' && !ok(Number(s))),
});
const DIFF: ObjectSpec = { strict: true, fields: { from: revisionText((n) => Number.isSafeInteger(n) && n >= 1), to: revisionText((n) => Number.isSafeInteger(n) && n >= 1) } };

const setPaths = (suffix: string) => fc.oneof(fixedPath(`/v1/policy-sets/${SET}${suffix}`), junkPaths((s) => `/v1/policy-sets/${s}${suffix}`, (s) => s === SET));

function routes(): RouteFuzz[] {
  const publishRoute = bodyRoute('POST /v1/policy-sets/{id}/versions', { paths: setPaths('/versions'), spec: PUBLISH, credentials, codes: CODES });
  return [
    authOnlyRoute('GET /v1/policy-sets', { path: '/v1/policy-sets', credentials, codes: CODES }),
    pathRoute('GET /v1/policy-sets/{id}/versions', { template: (s) => `/v1/policy-sets/${s}/versions`, valid: (s) => s === SET, credentials, codes: CODES }),
    pathRoute('GET /v1/policy-sets/{id}/versions/{revision}', {
      template: (s) => `/v1/policy-sets/${SET}/versions/${s}`,
      // Revision 1 exists; anything the route's number coercion reads as 1 would be answered.
      valid: (s) => Number(s) === 1,
      readable: (s) => Number.isSafeInteger(Number(s)) && Number(s) > 1,
      credentials,
      codes: CODES,
    }),
    queryRoute('GET /v1/policy-sets/{id}/diff', { paths: setPaths('/diff'), spec: DIFF, credentials, codes: CODES, hostile: { from: fc.constantFrom('2', '9007199254740991'), to: fc.constantFrom('1', '2') } }),
    {
      ...publishRoute,
      requests: fc.oneof(
        { weight: 3, arbitrary: publishRoute.requests },
        // The bundle as a document (YAML or JSON text), the bundle of another set, and both at once.
        {
          weight: 1,
          arbitrary: fc
            .record({
              credential: fc.constantFrom(...credentials.valid),
              body: fc.oneof(
                badDocument.map((document) => ({ document })),
                fc.constant({ bundle: bundleOf('shipping', 5) }),
                fc.constant({ document: JSON.stringify(bundleOf('shipping', 5)) }),
                fc.constant({ document: 'policySetId: refunds\npolicies: []', bundle: bundleOf(SET, 5) }),
                fc.constant({ document: '' }),
                // Alone, so nothing else in the body is refused first: a predicate's arguments nested past the schema's recursion.
                deepNesting(10_000).map((deep) => ({ bundle: { policySetId: SET, policies: [policy({ rules: { allowWhen: { predicate: 'p', args: [deep] } } })] } })),
              ),
            })
            .map(({ credential, body }) => ({ method: 'POST', path: `/v1/policy-sets/${SET}/versions`, headers: { authorization: credential, 'content-type': 'application/json' }, body: jsonText(body), kind: 'bad-document-or-set' })),
        },
      ),
    },
    bodyRoute('POST /v1/policy-sets/{id}/simulate', { paths: setPaths('/simulate'), spec: DECIDE, credentials, codes: CODES }),
    bodyRoute('POST /v1/policy-sets/{id}/explain', { paths: setPaths('/explain'), spec: DECIDE, credentials, codes: CODES }),
    bodyRoute('POST /v1/policy-sets/{id}/evaluate', { paths: setPaths('/evaluate'), spec: DECIDE, credentials, codes: CODES }),
    inputlessRoute('GET /v1/policy-status', { path: '/v1/policy-status', ok: jsonObject, codes: CODES }),
    inputlessRoute('GET /health', { path: '/health', ok: healthReport, codes: CODES, runs: HEALTH_RUNS }),
  ];
}

const ROUTES = [
  'GET /v1/policy-sets',
  'GET /v1/policy-sets/{id}/versions',
  'GET /v1/policy-sets/{id}/versions/{revision}',
  'GET /v1/policy-sets/{id}/diff',
  'POST /v1/policy-sets/{id}/versions',
  'POST /v1/policy-sets/{id}/simulate',
  'POST /v1/policy-sets/{id}/explain',
  'POST /v1/policy-sets/{id}/evaluate',
  'GET /v1/policy-status',
  'GET /health',
];

describeRestFuzz('policy service REST API under malformed input', ROUTES, { service: () => service, routes, snapshot, seed });

describe('policies topic consumers under poison', () => {
  it('count and skip poison, ignore forged bundles, and still follow the version published after them', async () => {
    const before = await snapshot();
    const watched = watcher.stats();
    const reportsBefore = (await auditCodes(kafka, namespace))['SECURITY.UNTRUSTED_GRANT'] ?? 0;
    // Only the policy service may write this topic; the admin principal stands in for a compromised or buggy writer.
    const records = samples(
      poisonRecords({ topicId: 'policies', bases: policyBases(SET), foreign: [decisionRecorded(), ...approvalBases(), ...ledgerBases()], forged: forgedPolicyGrants(SET), keyring: TEST_KEYRING, keyRequired: true }),
      derivedSeed(seed, 'policies-topic'),
      FUZZ_RUNS,
    );
    const expected = tally(records);
    await produceRaw(kafka, namespace, 'policies', records);

    expect(await publish(250)).toEqual({ status: 201, revision: 2 });
    await waitFor(() => (watcher.current(SET)?.revision === 2 ? true : undefined), { timeoutMs: 30_000, what: 'the guard to follow revision 2' });
    const status = await expectPoisonCounted(db, 'policy', `${service.url}/v1/policy-status`, before, expected);
    expect({ versions: status['versions'], sets: status['policySets'] }).toEqual({ versions: (before.fold.versions as number) + 1, sets: before.fold.sets });
    const versionRows = before.database['policy_versions']!.rows + 1;
    expect(await db.countReaching('policy', 'policy_versions', versionRows)).toBe(versionRows);
    // The guard took none of the forged "allow everything" bundles, and still follows.
    const stats = watcher.stats();
    expect({ following: stats.following, untrusted: stats.untrusted - watched.untrusted, revision: watcher.current(SET)?.revision }).toEqual({ following: true, untrusted: expected.forged, revision: 2 });
    // Each poison record parked once on the dead-letter topic, after the projection stored it: the same set.
    await grown(ends, before.topics, 'deadLetter', expected.poison, 'the poison on the dead-letter topic');
    const parked = await deadLettered(kafka, namespace, 'policies');
    expect(parked).toEqual(await db.unappliedKeys('policy'));
    expect(parked).toHaveLength(expected.poison);
    // Each forgery reported by the service and by the guard.
    await grown(ends, before.topics, 'audit', expected.forged * 2, 'the untrusted-grant reports');
    expect((await auditCodes(kafka, namespace))['SECURITY.UNTRUSTED_GRANT'] ?? 0).toBe(reportsBefore + expected.forged * 2);
    const moved = appended(before.topics, await ends.of(['policies', 'deadLetter']));
    expect(moved).toEqual({ policies: records.length + 1, deadLetter: expected.poison });
    expect(await aliveAndHealthy(service)).toEqual({ exit: null, health: 200 });
  }, 180_000);
});

/** How a request on the evaluations topic is addressed (NestJS's request/reply headers), and so what must come of it. */
type Addressing = 'none' | 'correlation-only' | 'reply' | 'reply-bad-partition' | 'reply-elsewhere' | 'reply-nowhere';

interface EvaluationInput extends KafkaInput {
  readonly addressing: Addressing;
  readonly correlationId: string;
}

/** Garbage requests for the evaluator: every shape of body, under every way of asking for (or misdirecting) a reply. */
function evaluationRequests(replyTopic: string, elsewhere: readonly string[]): fc.Arbitrary<EvaluationInput> {
  const valid = { policySetId: SET, identity, call: { tool: 'payments.refund' }, input: { amount: 5 } };
  const body = fc.oneof(
    fc.uint8Array({ minLength: 1, maxLength: 300 }).map((b) => Buffer.from(b)),
    malformedJsonText().map((t) => Buffer.from(t)),
    junkJson().map((v) => Buffer.from(typeof v === 'string' ? JSON.stringify(v) : jsonText(v))),
    // A valid request with one field broken: what a buggy client sends.
    fc.oneof(
      fc.record({ policySetId: fc.oneof(fc.constant(''), wrongType('string')) }),
      fc.record({ call: wrongType('object') }),
      fc.record({ identity: wrongType('object') }),
      fc.record({ input: deepNesting(10_000) }),
      fc.record({ revision: notIntegerIn(1, 1_000) }),
      fc.record({ [`x${CANARY}`]: junkJson() }),
    ).map((broken) => Buffer.from(jsonText({ ...valid, ...broken }))),
    // NestJS's own packet shape, naming a pattern nobody handles.
    fc.record({ pattern: fc.oneof(junkString(), fc.constant({ cmd: 'x' })), data: junkJson() }).map((p) => Buffer.from(jsonText(p))),
    fc.constantFrom(Buffer.alloc(0), Buffer.from([0, 1, 2]), Buffer.from('\u0000{}')),
  );
  const addressing = fc.constantFrom<Addressing>('none', 'correlation-only', 'reply', 'reply', 'reply', 'reply-bad-partition', 'reply-elsewhere', 'reply-nowhere');
  return fc.record({ value: body, addressing, target: fc.constantFrom(...elsewhere), partition: fc.constantFrom('abc', '-1', '7', '0.5', '', '1e3'), nowhere: fc.constantFrom('no-such-topic', '', ' ', '\u0000', '../x', 'x'.repeat(300)), junk: junkRecordHeaders() }).map(
    ({ value, addressing, target, partition, nowhere, junk }) => {
      const correlationId = randomUUID();
      const headers: Record<string, string | Buffer | (string | Buffer)[]> = { ...junk };
      if (addressing !== 'none') headers['kafka_correlationId'] = correlationId;
      if (addressing === 'reply' || addressing === 'reply-bad-partition') headers['kafka_replyTopic'] = replyTopic;
      if (addressing === 'reply') headers['kafka_replyPartition'] = '0';
      if (addressing === 'reply-bad-partition') headers['kafka_replyPartition'] = partition;
      if (addressing === 'reply-elsewhere') headers['kafka_replyTopic'] = target;
      if (addressing === 'reply-nowhere') headers['kafka_replyTopic'] = nowhere;
      return { key: null, value, headers, kind: `${addressing}`, expect: 'poison' as const, addressing, correlationId };
    },
  );
}

/** Collects every reply on the reply topic by correlation id, as the agent principal reads them. */
async function replyCollector(): Promise<{ consumer: Consumer; replies: Map<string, { value: string; error: boolean }> }> {
  const replies = new Map<string, { value: string; error: boolean }>();
  const consumer = agentKafka.consumer({ groupId: kafkaGroupId(agentKafka, `policy-fuzz-${randomUUID()}`), allowAutoTopicCreation: false, maxWaitTimeInMs: 100 });
  await consumer.connect();
  await consumer.subscribe({ topic: topicName('policyEvaluationReplies', namespace), fromBeginning: true });
  await consumer.run({
    eachMessage: async ({ message }) => {
      const id = message.headers?.['kafka_correlationId']?.toString();
      if (id) replies.set(id, { value: message.value?.toString() ?? '', error: message.headers?.['kafka_nest-err'] !== undefined });
    },
  });
  return { consumer, replies };
}

describe('policy evaluation requests under poison', () => {
  it('answers well-addressed garbage with coded refusals, writes nowhere else, evaluates nothing, and still answers the request that follows', async () => {
    const replyTopic = topicName('policyEvaluationReplies', namespace);
    const elsewhere = (['policies', 'audit', 'deadLetter', 'approvals'] as const).map((t) => topicName(t, namespace));
    const { consumer, replies } = await replyCollector();
    try {
      // The forged bundles of the test before were reported on the audit topic, and the service's signed
      // checkpoint over those reports follows within a second (CI saw it land in this window): let it land.
      await ends.quiet(['audit'], 1_500);
      const before = await snapshot();
      const records = samples(evaluationRequests(replyTopic, elsewhere), derivedSeed(seed, 'policy-evaluations'), FUZZ_RUNS);
      // Agents may write the requests topic: this is what a broken or hostile one can send.
      await produceRaw(agentKafka, namespace, 'policyEvaluations', records);

      // The request after the garbage, as a NestJS ClientKafka would send it.
      const correlationId = randomUUID();
      await produceRaw(agentKafka, namespace, 'policyEvaluations', [
        { key: null, value: Buffer.from(JSON.stringify({ policySetId: SET, identity, call: { tool: 'payments.refund' }, input: { amount: 500 } })), headers: { kafka_correlationId: correlationId, kafka_replyTopic: replyTopic, kafka_replyPartition: '0' }, kind: 'valid', expect: 'ignored' },
      ]);
      const answer = await waitFor(() => replies.get(correlationId), { timeoutMs: 60_000, what: 'the reply to the valid request' });
      expect(JSON.parse(answer.value)).toMatchObject({ ok: true, decision: { effect: 'deny', bundle: { policySetId: SET } } });

      // Every garbage request that asked for a reply where replies go got exactly one, and none was a decision.
      const addressed = records.filter((r) => r.addressing === 'reply');
      const got = await waitFor(() => {
        const found = addressed.map((r) => replies.get(r.correlationId));
        return found.every((f) => f !== undefined) ? (found as { value: string; error: boolean }[]) : undefined;
      }, { timeoutMs: 30_000, what: 'a reply to every well-addressed garbage request' });
      const decisions = got.filter((g) => !g.error && (JSON.parse(g.value) as { ok?: boolean }).ok !== false);
      expect(decisions).toEqual([]);
      for (const g of got.filter((x) => !x.error)) expect(JSON.parse(g.value)).toMatchObject({ ok: false, error: { code: expect.stringMatching(/^POLICY\./) } });
      // Nothing went anywhere but the reply topic; no decision was recorded, not even the valid
      // request's (the asker over Kafka is not authenticated, so the service records nothing).
      const moved = appended(before.topics, await ends.of(['policies', 'audit', 'deadLetter', 'policyEvaluationReplies']));
      expect({ policies: moved['policies'], audit: moved['audit'], deadLetter: moved['deadLetter'] }).toEqual({ policies: 0, audit: 0, deadLetter: 0 });
      expect(moved['policyEvaluationReplies']).toBeGreaterThanOrEqual(addressed.length + 1);
      expect(await aliveAndHealthy(service)).toEqual({ exit: null, health: 200 });
    } finally {
      await consumer.disconnect();
    }
  }, 180_000);
});
