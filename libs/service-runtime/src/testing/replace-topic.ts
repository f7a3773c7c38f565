import { type TopicId, topicName } from '@gatehouse/contracts';
import { provisionTopics } from '@gatehouse/kafka';
import { type Kafka } from 'kafkajs';

/**
 * Deletes the topic `topicId` of `namespace` and provisions it again, empty, with the catalog's
 * configs: what a lost broker or a recreated topic looks like to a database that was kept. Needs
 * an admin client (the tests' default user). The ACLs, which name the topic, stay.
 */
export async function replaceTopic(kafka: Kafka, topicId: TopicId, namespace: string, timeoutMs = 30_000): Promise<void> {
  const topic = topicName(topicId, namespace);
  const admin = kafka.admin();
  await admin.connect();
  try {
    await admin.deleteTopics({ topics: [topic], timeout: timeoutMs });
    const deadline = Date.now() + timeoutMs;
    // The broker deletes in the background: create the topic again once its name is free, then
    // wait until every partition answers for its (empty) log; right after creation a partition
    // may still answer "not the leader" for a moment.
    let created = false;
    for (;;) {
      if (!created && !(await admin.listTopics()).includes(topic)) {
        try {
          await provisionTopics(kafka, { namespace, topics: [topicId] });
          created = true;
        } catch (error) {
          if (Date.now() > deadline) throw error;
        }
      }
      if (created) {
        const offsets = await admin.fetchTopicOffsets(topic).catch(() => []);
        if (offsets.length > 0 && offsets.every((o) => o.high === '0')) return;
      }
      if (Date.now() > deadline) throw new Error(`${topic} was not recreated in time`);
      await new Promise((r) => setTimeout(r, 200));
    }
  } finally {
    await admin.disconnect();
  }
}
