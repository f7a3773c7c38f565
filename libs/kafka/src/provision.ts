import { GatehouseError, type TopicId, topicName, TOPICS, type TopicSpec } from '@gatehouse/contracts';
import { type Admin, type Kafka } from 'kafkajs';
import { ConfigResourceTypes } from './kafkajs.js';

export interface ProvisionReport {
  readonly created: string[];
  readonly updated: string[];
  readonly unchanged: string[];
}

/** The variable that sets how many partitions the catalog's partitioned topics get at provisioning (a small dev or test broker). */
export const TOPIC_PARTITIONS_ENV = 'GATEHOUSE_TOPIC_PARTITIONS';

/** The partition count set by GATEHOUSE_TOPIC_PARTITIONS (1 to 1,000), or undefined (the catalog's); a typed error for anything else. */
export function topicPartitionsFromEnv(env: NodeJS.ProcessEnv = process.env): number | undefined {
  const raw = env[TOPIC_PARTITIONS_ENV];
  if (raw === undefined || raw === '') return undefined;
  const value = Number(raw);
  if (!/^\d+$/.test(raw) || value < 1 || value > 1_000) {
    throw new GatehouseError('KAFKA.CONFIG_INVALID', `${TOPIC_PARTITIONS_ENV} must be a whole number from 1 to 1000`, { category: 'validation', details: { variable: TOPIC_PARTITIONS_ENV } });
  }
  return value;
}

/**
 * The partitions `topicId` gets when created: the catalog's, or `partitions` for the topics the
 * catalog partitions at all (a one-partition topic, whose order is global, stays at one).
 */
export function topicPartitions(topicId: TopicId, partitions?: number): number {
  const spec = TOPICS[topicId];
  return partitions !== undefined && spec.partitions > 1 ? partitions : spec.partitions;
}

/** The fewest copies an acknowledged write has: 2 from 3 replicas on (one node may fail), else 1. */
export function minInsyncReplicas(replicationFactor: number): number {
  return replicationFactor >= 3 ? 2 : 1;
}

/** The replication factor a cluster of `brokers` nodes gives the catalog topics: 3 where it can, else one per node. */
export async function clusterReplicationFactor(admin: Admin): Promise<number> {
  const { brokers } = await admin.describeCluster();
  return Math.max(1, Math.min(3, brokers.length));
}

/**
 * Resolves once every partition of `topics` has a leader that answers for it, as a reader will
 * ask: the metadata names a leader and ListOffsets succeeds. Right after creation a node may not
 * know of a topic yet, or a partition may answer "not the leader" for a moment: asked again. Fails
 * after `timeoutMs`.
 */
export async function leadersElected(admin: Admin, topics: readonly string[], timeoutMs = 30_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    try {
      const { topics: found } = await admin.fetchTopicMetadata({ topics: [...topics] });
      if (found.length === topics.length && found.every((t) => t.partitions.length > 0 && t.partitions.every((p) => p.leader >= 0))) {
        for (const topic of topics) await admin.fetchTopicOffsets(topic);
        return;
      }
    } catch (error) {
      const type = (error as { type?: string }).type;
      if ((error as { retriable?: boolean }).retriable !== true && type !== 'UNKNOWN_TOPIC_OR_PARTITION' && type !== 'NOT_LEADER_FOR_PARTITION') throw error;
    }
    if (Date.now() > deadline) throw new Error(`topics have no leaders after ${timeoutMs} ms`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

/**
 * Makes the cluster match the catalog: creates missing topics and sets the catalog's
 * configs on existing ones. Safe to run any number of times. Each topic gets
 * `replicationFactor` replicas (default: 3 on a cluster of three or more, else one per node) and
 * the `min.insync.replicas` that goes with it, so acks=all means two copies on the cluster. A
 * topic is created with the catalog's partitions, or `partitions` (default GATEHOUSE_TOPIC_PARTITIONS)
 * for the partitioned ones; the partition count of an existing topic is never changed: adding
 * partitions moves keys (docs/capacity.md says how to grow).
 */
export async function provisionTopics(
  kafka: Kafka,
  options: { namespace?: string; topics?: readonly TopicId[]; replicationFactor?: number; partitions?: number } = {},
): Promise<ProvisionReport> {
  const ids = options.topics ?? (Object.keys(TOPICS) as TopicId[]);
  const partitions = options.partitions ?? topicPartitionsFromEnv();
  const admin = kafka.admin();
  await admin.connect();
  try {
    const replicationFactor = options.replicationFactor ?? (await clusterReplicationFactor(admin));
    const minIsr = { 'min.insync.replicas': String(minInsyncReplicas(replicationFactor)) };
    const topics: TopicSpec[] = ids.map((id) => ({ ...TOPICS[id], name: topicName(id, options.namespace), partitions: topicPartitions(id, partitions), configs: { ...TOPICS[id].configs, ...minIsr } }));
    const existing = new Set(await admin.listTopics());
    const missing = topics.filter((t) => !existing.has(t.name));
    if (missing.length > 0) {
      await admin.createTopics({
        // Waited for below: on a cluster a node may not know of a new topic for a moment.
        waitForLeaders: false,
        topics: missing.map((t) => ({
          topic: t.name,
          numPartitions: t.partitions,
          replicationFactor,
          configEntries: Object.entries(t.configs).map(([name, value]) => ({ name, value })),
        })),
      });
      await leadersElected(admin, missing.map((t) => t.name));
    }
    const present = topics.filter((t) => existing.has(t.name));
    const updated: string[] = [];
    if (present.length > 0) {
      const described = await admin.describeConfigs({
        includeSynonyms: false,
        resources: present.map((t) => ({ type: ConfigResourceTypes.TOPIC, name: t.name })),
      });
      for (const resource of described.resources) {
        const spec = present.find((t) => t.name === resource.resourceName);
        if (!spec) continue;
        const current = new Map(resource.configEntries.map((e) => [e.configName, e.configValue]));
        const drift = Object.entries(spec.configs).filter(([k, v]) => current.get(k) !== v);
        if (drift.length > 0) {
          await admin.alterConfigs({
            validateOnly: false,
            // ALTER_CONFIGS replaces the topic's dynamic configs: send the whole catalog set.
            resources: [{ type: ConfigResourceTypes.TOPIC, name: spec.name, configEntries: Object.entries(spec.configs).map(([name, value]) => ({ name, value })) }],
          });
          updated.push(spec.name);
        }
      }
    }
    return {
      created: missing.map((t) => t.name),
      updated,
      unchanged: present.map((t) => t.name).filter((n) => !updated.includes(n)),
    };
  } finally {
    await admin.disconnect();
  }
}
