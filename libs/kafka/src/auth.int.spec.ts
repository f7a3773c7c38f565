import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { randomUUID } from 'node:crypto';
import { topicName } from '@gatehouse/contracts';
import { type Kafka, type Producer } from 'kafkajs';
import { aclKey, DEFAULT_KAFKA_PRINCIPALS, desiredAcls, describeAllAcls, LEGACY_GROUP_PREFIXES, provisionAcls } from './acls.js';
import { createKafkaClient } from './client.js';
import { KAFKA_SASL_MECHANISM_ENV, kafkaConfigFromEnv, kafkaSasl } from './config.js';
import { kafkaGroupId, kafkaTransactionalId } from './groups.js';
import { AclOperationTypes, AclPermissionTypes, AclResourceTypes, Partitioners, ResourcePatternTypes } from './kafkajs.js';
import { replayTopic } from './replay.js';
import { joinGroupAs, provisionedNamespace, testKafka, transactAs, waitFor } from './testing/index.js';

// Authentication and per-principal ACLs on the real broker the test run started (SASL/SCRAM,
// StandardAuthorizer, `admin` the only super user). The scripts export the admin credentials;
// the other principals' passwords sit beside admin's (kafka.sh generates them).
let admin: Kafka;
let namespace: string;
const opened: Producer[] = [];

beforeAll(async () => {
  if (!process.env[KAFKA_SASL_MECHANISM_ENV]) {
    throw new Error(`${KAFKA_SASL_MECHANISM_ENV} is not set: run through infra/scripts/test.sh (the broker authenticates every client)`);
  }
  admin = testKafka('auth-int-spec');
  namespace = await provisionedNamespace(admin, 'auth');
});

afterAll(async () => {
  await Promise.all(opened.map((p) => p.disconnect().catch(() => undefined)));
});

/** The producer the project uses (idempotent, acks=all), as `user`; one opaque record to `topic`. */
async function produceAs(user: string, topic: string): Promise<void> {
  const producer = testKafka(`auth-${user}`, user).producer({
    idempotent: true,
    maxInFlightRequests: 1,
    allowAutoTopicCreation: false,
    createPartitioner: Partitioners.DefaultPartitioner,
    retry: { retries: 1 },
  });
  opened.push(producer);
  await producer.connect();
  await producer.send({ topic, acks: -1, messages: [{ key: 'k', value: 'opaque' }] });
}

/** The failure of `promise`: the error's name, and the broker's error type found along its causes (kafkajs wraps it). */
async function failure(promise: Promise<unknown>): Promise<{ name: string; type?: string; message: string }> {
  try {
    await promise;
  } catch (error) {
    const e = error as { name: string; message: string };
    let type: string | undefined;
    for (let c = error as { type?: string; cause?: unknown } | undefined, depth = 0; c && depth < 5 && type === undefined; c = c.cause as typeof c, depth += 1) type = c.type;
    return { name: e.name, type, message: e.message };
  }
  throw new Error('expected a failure');
}

describe('authentication', () => {
  it('refuses a client without credentials: the broker closes the connection before any request', async () => {
    const config = kafkaConfigFromEnv('auth-anonymous', { ...process.env, [KAFKA_SASL_MECHANISM_ENV]: '', GATEHOUSE_KAFKA_USERNAME: '', GATEHOUSE_KAFKA_PASSWORD_FILE: '', GATEHOUSE_KAFKA_PASSWORD: '' });
    expect(config.sasl).toBeUndefined();
    const client = createKafkaClient(config, () => undefined).admin();
    // kafkajs' connect only exchanges ApiVersions, which a SASL listener answers before authentication.
    const error = await failure(client.connect().then(() => client.describeCluster()));
    await client.disconnect();
    expect(['KafkaJSConnectionClosedError', 'KafkaJSConnectionError', 'KafkaJSNumberOfRetriesExceeded']).toContain(error.name);
  });

  it('refuses a wrong password with a SASL authentication error', async () => {
    const config = { ...kafkaConfigFromEnv('auth-wrong-password'), sasl: kafkaSasl('scram-sha-512', DEFAULT_KAFKA_PRINCIPALS.agent, 'not-the-password') };
    const client = createKafkaClient(config, () => undefined).admin();
    const error = await failure(client.connect());
    await client.disconnect();
    expect(error.name).toBe('KafkaJSSASLAuthenticationError');
    expect(error.message).not.toContain('not-the-password');
  });
});

describe('per-principal ACLs', () => {
  it('lets the agent principal append to audit, and refuses it ledger and policies', async () => {
    await produceAs(DEFAULT_KAFKA_PRINCIPALS.agent, topicName('audit', namespace));
    for (const id of ['ledger', 'policies'] as const) {
      const error = await failure(produceAs(DEFAULT_KAFKA_PRINCIPALS.agent, topicName(id, namespace)));
      expect(error.type).toBe('TOPIC_AUTHORIZATION_FAILED');
    }
  });

  it('lets the ledger service append to ledger and the policy service to policies', async () => {
    await produceAs(DEFAULT_KAFKA_PRINCIPALS.ledger, topicName('ledger', namespace));
    await produceAs(DEFAULT_KAFKA_PRINCIPALS.policy, topicName('policies', namespace));
  });

  it('lets the agent replay approvals (topic and throwaway group), and refuses it the ledger', async () => {
    await produceAs(DEFAULT_KAFKA_PRINCIPALS.approval, topicName('approvals', namespace));
    const agent = testKafka('auth-agent-replay', DEFAULT_KAFKA_PRINCIPALS.agent);
    const replay = await replayTopic(agent, 'approvals', { namespace, onRecord: () => undefined, timeoutMs: 20_000 });
    expect(replay.poison).toBe(1); // the opaque record: read, and not a contract event
    const error = await failure(replayTopic(agent, 'ledger', { namespace, onRecord: () => undefined, timeoutMs: 20_000 }));
    expect(error.type).toBe('TOPIC_AUTHORIZATION_FAILED');
  });

  it('provisions the ACLs idempotently: a second run creates nothing and the set is unchanged', async () => {
    const owned = (acls: { resourceName: string }[]) => new Set(acls.filter((a) => a.resourceName.startsWith(`${namespace}.`)).map((a) => aclKey(a as Parameters<typeof aclKey>[0])));
    const client = admin.admin();
    await client.connect();
    try {
      const before = owned(await describeAllAcls(client));
      const again = await provisionAcls(admin, { namespace });
      const after = owned(await describeAllAcls(client));
      expect(again).toEqual({ created: 0, unchanged: desiredAcls({ namespace }).length, removed: 0, securityDisabled: false });
      expect(after).toEqual(before);
      expect(before).toEqual(owned(desiredAcls({ namespace })));
    } finally {
      await client.disconnect();
    }
  });

  it('revokes a grant the data no longer holds, and leaves what it does not manage', async () => {
    const client = admin.admin();
    await client.connect();
    const ledger = topicName('ledger', namespace);
    // A grant as an older version of the data made it (the agent reading the ledger), an
    // operator's DENY for the same principal, and another namespace's grant.
    const ALLOW = { host: '*', permissionType: AclPermissionTypes.ALLOW };
    const retired = { principal: `User:${DEFAULT_KAFKA_PRINCIPALS.agent}`, resourceType: AclResourceTypes.TOPIC, resourceName: ledger, resourcePatternType: ResourcePatternTypes.LITERAL, operation: AclOperationTypes.READ, ...ALLOW };
    const operatorDeny = { ...retired, operation: AclOperationTypes.WRITE, permissionType: AclPermissionTypes.DENY };
    const elsewhere = { ...retired, resourceName: `other-${namespace}.gatehouse.ledger.v1` };
    try {
      await client.createAcls({ acl: [retired, operatorDeny, elsewhere] });
      const agent = testKafka('auth-agent-retired', DEFAULT_KAFKA_PRINCIPALS.agent);
      await waitFor(async () => ((await replayTopic(agent, 'ledger', { namespace, onRecord: () => undefined, timeoutMs: 20_000 }).then(() => true, () => false)) ? true : undefined), { what: 'the retired grant taking effect' });

      const report = await provisionAcls(admin, { namespace });
      expect(report).toMatchObject({ created: 0, removed: 1 });
      const keys = new Set((await describeAllAcls(client)).map(aclKey));
      expect(keys.has(aclKey(retired))).toBe(false);
      expect(keys.has(aclKey(operatorDeny))).toBe(true);
      expect(keys.has(aclKey(elsewhere))).toBe(true);
      const error = await failure(replayTopic(agent, 'ledger', { namespace, onRecord: () => undefined, timeoutMs: 20_000 }));
      expect(error.type).toBe('TOPIC_AUTHORIZATION_FAILED');
      expect(await provisionAcls(admin, { namespace })).toMatchObject({ created: 0, removed: 0 });
    } finally {
      await client.deleteAcls({ filters: [operatorDeny, elsewhere] });
      await client.disconnect();
    }
  });
});

describe('consumer groups and transactional ids per principal', () => {
  const P = DEFAULT_KAFKA_PRINCIPALS;

  it("lets a principal join its own groups, and refuses it the policy evaluator's, another principal's and the old shared ones", async () => {
    const policies = topicName('policies', namespace);
    expect(await joinGroupAs(P.agent, kafkaGroupId(P.agent, `probe-${randomUUID()}`), policies)).toBe('joined');
    for (const group of [
      // The policy service's evaluator group (Nest appends -server): an agent in it would be handed its partitions.
      kafkaGroupId(P.policy, `policy-evaluator-${namespace}-server`),
      kafkaGroupId(P.approval, `replay-${randomUUID()}`),
      `agent-acme:replay-${randomUUID()}`,
      `gatehouse-policy-evaluator-${namespace}-server`,
      `gatehouse-replay-${randomUUID()}`,
    ]) {
      expect({ group, answer: await joinGroupAs(P.agent, group, policies) }).toEqual({ group, answer: 'GROUP_AUTHORIZATION_FAILED' });
    }
    expect(await joinGroupAs(P.policy, kafkaGroupId(P.agent, `replay-${randomUUID()}`), policies)).toBe('GROUP_AUTHORIZATION_FAILED');
  });

  it("lets a writer use its own transactional ids and refuses it another principal's", async () => {
    expect(await transactAs(P.agent, kafkaTransactionalId(P.agent, `probe-${randomUUID()}`))).toBe('transacted');
    for (const id of [kafkaTransactionalId(P.ledger, `probe-${randomUUID()}`), `${P.ledger}-probe-${randomUUID()}`]) {
      expect(await transactAs(P.agent, id)).toBe('TRANSACTIONAL_ID_AUTHORIZATION_FAILED');
    }
  });

  it('revokes the shared group prefixes and dash transactional ids an older version granted, on an upgraded cluster', async () => {
    const client = admin.admin();
    await client.connect();
    const ALLOW = { host: '*', permissionType: AclPermissionTypes.ALLOW, resourcePatternType: ResourcePatternTypes.PREFIXED };
    const old = [
      ...LEGACY_GROUP_PREFIXES.map((resourceName) => ({ principal: `User:${P.agent}`, resourceType: AclResourceTypes.GROUP, resourceName, operation: AclOperationTypes.READ, ...ALLOW })),
      { principal: `User:${P.agent}`, resourceType: AclResourceTypes.TRANSACTIONAL_ID, resourceName: `${P.agent}-`, operation: AclOperationTypes.WRITE, ...ALLOW },
    ];
    const evaluatorGroup = `gatehouse-policy-evaluator-${namespace}-server`;
    try {
      await client.createAcls({ acl: old });
      // As before the upgrade: the agent may join the evaluator's group.
      await waitFor(async () => ((await joinGroupAs(P.agent, evaluatorGroup, topicName('policies', namespace))) === 'joined' ? true : undefined), { what: 'the old grant taking effect' });

      const report = await provisionAcls(admin, { namespace });
      // At least these (a concurrent run on the shared broker may have left more of the old kind).
      expect(report.removed).toBeGreaterThanOrEqual(old.length);
      const held = new Set((await describeAllAcls(client)).map(aclKey));
      expect(old.filter((e) => held.has(aclKey(e)))).toEqual([]);
      expect(await joinGroupAs(P.agent, evaluatorGroup, topicName('policies', namespace))).toBe('GROUP_AUTHORIZATION_FAILED');
      expect(await transactAs(P.agent, `${P.agent}-probe-${randomUUID()}`)).toBe('TRANSACTIONAL_ID_AUTHORIZATION_FAILED');
    } finally {
      await client.deleteAcls({ filters: old }).catch(() => undefined);
      await client.disconnect();
    }
  });
});
