import { randomUUID } from 'node:crypto';
import { topicName } from '@gatehouse/contracts';
import { kafkaGroupId } from '@gatehouse/kafka';
import { testKafka, waitFor } from '@gatehouse/kafka/testing';
import { type Consumer, type Producer } from 'kafkajs';

/** A reply of the policy service's Kafka evaluator. */
export interface EvaluationReply {
  readonly ok: boolean;
  readonly decision?: { readonly effect: string; readonly recorded?: boolean; readonly decisionId?: string };
  readonly error?: { readonly code: string };
}

/**
 * An agent runtime not written in TypeScript, asking the policy service over Kafka request/reply
 * with nothing but the `agent` principal's credentials: requests with NestJS's headers, replies
 * read in a group of its own principal.
 */
export class AgentEvaluations {
  private readonly replies = new Map<string, EvaluationReply>();

  private constructor(
    private readonly namespace: string,
    private readonly producer: Producer,
    private readonly consumer: Consumer,
  ) {}

  static async start(namespace: string): Promise<AgentEvaluations> {
    const agent = testKafka('security-agent-evaluations', 'agent');
    const consumer = agent.consumer({ groupId: kafkaGroupId(agent, `policy-client-${randomUUID()}`), allowAutoTopicCreation: false, maxWaitTimeInMs: 100 });
    const producer = agent.producer({ allowAutoTopicCreation: false });
    await Promise.all([consumer.connect(), producer.connect()]);
    const self = new AgentEvaluations(namespace, producer, consumer);
    await consumer.subscribe({ topic: topicName('policyEvaluationReplies', namespace), fromBeginning: true });
    await consumer.run({
      eachMessage: async ({ message }) => {
        const id = message.headers?.['kafka_correlationId']?.toString();
        if (id && message.value) self.replies.set(id, JSON.parse(message.value.toString()) as EvaluationReply);
      },
    });
    return self;
  }

  /** Sends one request and waits for its reply. */
  async ask(request: object, timeoutMs = 30_000): Promise<EvaluationReply> {
    const correlationId = randomUUID();
    const replyTopic = topicName('policyEvaluationReplies', this.namespace);
    await this.producer.send({
      topic: topicName('policyEvaluations', this.namespace),
      acks: -1,
      messages: [{ value: JSON.stringify(request), headers: { kafka_correlationId: correlationId, kafka_replyTopic: replyTopic, kafka_replyPartition: '0' } }],
    });
    return waitFor(() => this.replies.get(correlationId), { timeoutMs, what: 'the evaluation reply' });
  }

  async close(): Promise<void> {
    await Promise.allSettled([this.consumer.disconnect(), this.producer.disconnect()]);
  }
}
