// Creates or updates the catalog topics on the cluster named by GATEHOUSE_KAFKA_BROKERS, and
// grants every principal its ACLs on them (libs/kafka/src/acls.ts). Used by
// infra/scripts/infra.sh; safe to run any number of times. Runs as the configured Kafka user
// (the scripts use the super user `admin`).
import { kafkaPrincipalsFromEnv, provisionAcls } from '../acls.js';
import { createKafkaClient } from '../client.js';
import { kafkaConfigFromEnv } from '../config.js';
import { provisionTopics } from '../provision.js';

const namespace = process.env['GATEHOUSE_TOPIC_NAMESPACE'] || undefined;
try {
  const principals = kafkaPrincipalsFromEnv();
  const kafka = createKafkaClient(kafkaConfigFromEnv('gatehouse-provision'));
  const report = await provisionTopics(kafka, { namespace });
  console.log(
    `kafka: topics ready (created ${report.created.length}, updated ${report.updated.length}, unchanged ${report.unchanged.length})`,
  );
  const acls = await provisionAcls(kafka, { namespace, principals });
  console.log(
    acls.securityDisabled
      ? 'kafka: the cluster has no authorizer; no ACLs granted'
      : `kafka: ACLs ready (created ${acls.created}, unchanged ${acls.unchanged}, revoked ${acls.removed})`,
  );
} catch (error) {
  console.error(`kafka: provisioning failed: ${(error as Error).message}`);
  process.exitCode = 1;
}
