import { describe, expect, it } from '@jest/globals';
import { GatehouseError, topicName } from '@gatehouse/contracts';
import { DEFAULT_KAFKA_PRINCIPALS } from './acls.js';
import { ConfigResourceTypes } from './kafkajs.js';
import { provisionTopics } from './provision.js';
import { provisionedNamespace, testKafka } from './testing/index.js';
import { assertTopicRetention, describeTopicRetention } from './topic-retention.js';

// The start-up check of the folds whose state depends on what their topic keeps (approvals,
// ledger), on the real broker with the real principals: the service reads its topic's settings,
// the agent can neither read nor change them, and a topic that could delete too soon is refused.
const P = DEFAULT_KAFKA_PRINCIPALS;
const admin = testKafka('retention-int-spec');

async function setConfigs(topic: string, configs: Record<string, string>): Promise<void> {
  const client = admin.admin();
  await client.connect();
  try {
    await client.alterConfigs({ validateOnly: false, resources: [{ type: ConfigResourceTypes.TOPIC, name: topic, configEntries: Object.entries(configs).map(([name, value]) => ({ name, value })) }] });
  } finally {
    await client.disconnect();
  }
}

async function refusal(promise: Promise<unknown>): Promise<GatehouseError> {
  const error = await promise.then(
    () => undefined,
    (e: unknown) => e,
  );
  if (!(error instanceof GatehouseError)) throw new Error(`expected a GatehouseError, got ${String(error)}`);
  return error;
}

describe('topic retention at start-up', () => {
  it("lets the approval and ledger services read their topic's retention as provisioned, and refuses the agent", async () => {
    const namespace = await provisionedNamespace(admin, 'retention');
    const approvals = topicName('approvals', namespace);
    const ledger = topicName('ledger', namespace);
    expect(await assertTopicRetention(testKafka('retention-approval', P.approval), approvals, { atLeastMs: 51 * 24 * 3_600_000 })).toEqual({
      cleanupPolicy: 'delete',
      retentionMs: 60 * 24 * 3_600_000,
      retentionBytes: -1,
    });
    // The ledger's need with its default checkpoints (`checkpointRetentionNeedMs`): two days, two refreshes of an unchanged partition.
    expect(await assertTopicRetention(testKafka('retention-ledger', P.ledger), ledger, { atLeastMs: 2 * 24 * 3_600_000 })).toMatchObject({ retentionMs: 14 * 24 * 3_600_000, retentionBytes: -1 });
    // Another service's topic is not theirs to read: the grant is per topic.
    expect((await refusal(describeTopicRetention(testKafka('retention-approval-ledger', P.approval), ledger))).code).toBe('KAFKA.LOG_RETENTION_UNKNOWN');
    // The agent may read approvals records but not the topic's settings, and certainly not change them.
    const agent = testKafka('retention-agent', P.agent);
    expect((await refusal(describeTopicRetention(agent, approvals))).code).toBe('KAFKA.LOG_RETENTION_UNKNOWN');
    const agentAdmin = agent.admin();
    await agentAdmin.connect();
    try {
      const altered = await agentAdmin
        .alterConfigs({ validateOnly: false, resources: [{ type: ConfigResourceTypes.TOPIC, name: approvals, configEntries: [{ name: 'retention.ms', value: '1000' }] }] })
        .then(
          () => 'altered',
          (e: { type?: string }) => e.type ?? 'refused',
        );
      expect(altered).toBe('TOPIC_AUTHORIZATION_FAILED');
    } finally {
      await agentAdmin.disconnect();
    }
    expect((await describeTopicRetention(admin, approvals)).retentionMs).toBe(60 * 24 * 3_600_000);
  });

  it('refuses a topic that could delete what the fold needs: a shorter time, a size limit, compaction; provisioning restores it', async () => {
    const namespace = await provisionedNamespace(admin, 'retention');
    const approvals = topicName('approvals', namespace);
    const service = testKafka('retention-approval-short', P.approval);
    const need = { atLeastMs: 51 * 24 * 3_600_000 };
    for (const drift of [{ 'retention.ms': String(7 * 24 * 3_600_000) }, { 'retention.bytes': String(1 << 30) }, { 'cleanup.policy': 'compact,delete' }]) {
      await setConfigs(approvals, { 'message.timestamp.type': 'LogAppendTime', 'cleanup.policy': 'delete', 'retention.ms': String(60 * 24 * 3_600_000), 'retention.bytes': '-1', ...drift });
      const error = await refusal(assertTopicRetention(service, approvals, need));
      expect({ code: error.code, category: error.category, required: error.details['requiredRetentionMs'] }).toEqual({ code: 'KAFKA.LOG_RETENTION_TOO_SHORT', category: 'validation', required: need.atLeastMs });
    }
    // The ledger keeps its state in checkpoints: less than two days (with hourly ones) is refused,
    // and without checkpoints (its need is then every record for ever) a time limit of any length.
    const ledger = topicName('ledger', namespace);
    const ledgerService = testKafka('retention-ledger-short', P.ledger);
    await setConfigs(ledger, { 'message.timestamp.type': 'LogAppendTime', 'cleanup.policy': 'delete', 'retention.ms': String(24 * 3_600_000), 'retention.bytes': '-1' });
    expect((await refusal(assertTopicRetention(ledgerService, ledger, { atLeastMs: 2 * 24 * 3_600_000 }))).code).toBe('KAFKA.LOG_RETENTION_TOO_SHORT');
    await setConfigs(ledger, { 'message.timestamp.type': 'LogAppendTime', 'cleanup.policy': 'delete', 'retention.ms': String(3_650 * 24 * 3_600_000), 'retention.bytes': '-1' });
    expect((await refusal(assertTopicRetention(ledgerService, ledger, 'forever'))).code).toBe('KAFKA.LOG_RETENTION_TOO_SHORT');
    // Provisioning puts the catalog's settings back, and the check passes again.
    await provisionTopics(admin, { namespace });
    await expect(assertTopicRetention(service, approvals, need)).resolves.toMatchObject({ retentionBytes: -1 });
    await expect(assertTopicRetention(testKafka('retention-ledger-ok', P.ledger), ledger, { atLeastMs: 2 * 24 * 3_600_000 })).resolves.toMatchObject({ retentionMs: 14 * 24 * 3_600_000 });
  });
});
