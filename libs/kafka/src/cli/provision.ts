// Creates or updates the catalog topics on the cluster named by GATEHOUSE_KAFKA_BROKERS.
// Used by infra/scripts/infra.sh; safe to run any number of times.
import { createKafkaClient } from '../client.js';
import { kafkaConfigFromEnv } from '../config.js';
import { provisionTopics } from '../provision.js';

const namespace = process.env['GATEHOUSE_TOPIC_NAMESPACE'] || undefined;
const kafka = createKafkaClient(kafkaConfigFromEnv('gatehouse-provision'));
try {
  const report = await provisionTopics(kafka, { namespace });
  console.log(
    `kafka: topics ready (created ${report.created.length}, updated ${report.updated.length}, unchanged ${report.unchanged.length})`,
  );
} catch (error) {
  console.error(`kafka: topic provisioning failed: ${(error as Error).message}`);
  process.exitCode = 1;
}
