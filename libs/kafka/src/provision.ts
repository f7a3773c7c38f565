import { type TopicId, topicName, TOPICS, type TopicSpec } from '@gatehouse/contracts';
import { type Kafka } from 'kafkajs';
import { ConfigResourceTypes } from './kafkajs.js';

export interface ProvisionReport {
  readonly created: string[];
  readonly updated: string[];
  readonly unchanged: string[];
}

/**
 * Makes the cluster match the catalog: creates missing topics and sets the catalog's
 * configs on existing ones. Safe to run any number of times.
 */
export async function provisionTopics(
  kafka: Kafka,
  options: { namespace?: string; topics?: readonly TopicId[]; replicationFactor?: number } = {},
): Promise<ProvisionReport> {
  const replicationFactor = options.replicationFactor ?? 1;
  const ids = options.topics ?? (Object.keys(TOPICS) as TopicId[]);
  const topics: TopicSpec[] = ids.map((id) => ({ ...TOPICS[id], name: topicName(id, options.namespace) }));
  const admin = kafka.admin();
  await admin.connect();
  try {
    const existing = new Set(await admin.listTopics());
    const missing = topics.filter((t) => !existing.has(t.name));
    if (missing.length > 0) {
      await admin.createTopics({
        waitForLeaders: true,
        topics: missing.map((t) => ({
          topic: t.name,
          numPartitions: t.partitions,
          replicationFactor,
          configEntries: Object.entries(t.configs).map(([name, value]) => ({ name, value })),
        })),
      });
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
