import { GatehouseError, topicName } from '@gatehouse/contracts';
import { kafkaGroupId, type KafkaConnectionConfig } from '@gatehouse/kafka';
import { Logger } from '@nestjs/common';
import { KafkaHeaders, ServerKafka } from '@nestjs/microservices';
import { of } from 'rxjs';
import { z } from 'zod';
import { PolicyError } from '../errors.js';
import { DecideRequest, type PolicyDecisions } from './policy-decisions.js';

// The broker's floor is group.min.session.timeout.ms (6 s by default); heartbeats a third of it.
const EVALUATOR_SESSION_TIMEOUT_MS = 8_000;
const EVALUATOR_HEARTBEAT_MS = 2_500;

/** The evaluator's consumer group (before Nest's `-server`): the service principal's own, one per topic namespace. */
export function evaluatorGroupId(connection: KafkaConnectionConfig, namespace: string | undefined): string {
  return kafkaGroupId(connection, namespace ? `policy-evaluator-${namespace}` : 'policy-evaluator');
}

/** An evaluation request on `gatehouse.policy-evaluations.v1`: the REST body plus the policy set. */
const KafkaEvaluateRequest = DecideRequest.extend({ policySetId: z.string().min(1).max(128) });

/** The reply: the decision, or a coded error (never request content). */
export type KafkaEvaluateReply = { readonly ok: true; readonly decision: unknown } | { readonly ok: false; readonly error: { readonly code: string; readonly message: string } };

/**
 * NestJS's Kafka server, replying only where replies belong. The reply topic and partition come
 * from the request's headers, so without this an agent could have this service write to any
 * topic its principal may write (the policies log, which refuses keyless records: the failed
 * reply was an unhandled rejection that killed the process), or to a partition that does not
 * exist. A request naming another reply topic is dropped, and a reply the broker refuses is
 * logged, never thrown.
 */
class EvaluatorServer extends ServerKafka {
  private readonly log = new Logger('policy-evaluator');

  constructor(
    options: ConstructorParameters<typeof ServerKafka>[0],
    private readonly replyTopic: string,
  ) {
    super(options);
  }

  override async handleMessage(payload: Parameters<ServerKafka['handleMessage']>[0]): Promise<unknown> {
    const asked = payload.message.headers?.[KafkaHeaders.REPLY_TOPIC];
    if (asked !== undefined && asked !== null && String(asked) !== this.replyTopic) {
      this.log.warn(`dropped a request naming another reply topic {"code":"POLICY.REPLY_TOPIC_REFUSED","partition":${payload.partition},"offset":"${payload.message.offset}"}`);
      return undefined;
    }
    return super.handleMessage(payload);
  }

  override async sendMessage(...args: Parameters<ServerKafka['sendMessage']>): ReturnType<ServerKafka['sendMessage']> {
    try {
      return await super.sendMessage(...args);
    } catch {
      this.log.warn('a reply could not be sent {"code":"POLICY.REPLY_FAILED"}');
      return [];
    }
  }
}

/**
 * `evaluate` over Kafka request/reply, through @nestjs/microservices' Kafka transport, for agents
 * not written in TypeScript: a request on `gatehouse.policy-evaluations.v1` carrying the headers
 * `kafka_correlationId`, `kafka_replyTopic` (`gatehouse.policy-evaluations.v1.reply`) and
 * `kafka_replyPartition` gets its reply there with the same correlation id. Who may ask is the
 * broker's business: only principals with WRITE on the requests topic (agents) can. Who asked,
 * the service cannot tell (a record does not carry its writer), so the identity in a request is
 * an unauthenticated claim: the decision is made on it and recorded nowhere (`answer`, the
 * reply says `recorded: false`), never written to the audit trail as the service's own.
 */
export class PolicyKafkaEvaluator {
  private readonly server: ServerKafka;

  constructor(
    connection: KafkaConnectionConfig,
    namespace: string | undefined,
    private readonly decisions: PolicyDecisions,
  ) {
    const sasl = connection.sasl;
    this.server = new EvaluatorServer({
      client: {
        clientId: `${connection.clientId}-evaluator`,
        brokers: [...connection.brokers],
        ...(sasl && { sasl: { mechanism: sasl.mechanism, username: sasl.username, password: sasl.password } as never }),
        retry: { retries: 5, initialRetryTime: 200, maxRetryTime: 5_000 },
      },
      // One group per topic namespace: members of one group that subscribe to different topics
      // (two namespaces on one cluster) are each assigned the other's partitions round-robin, and
      // kafkajs drops the ones it did not subscribe to, so requests went unanswered. The group is
      // the service principal's own (`svc-policy:policy-evaluator[-<namespace>]`, Nest appends
      // `-server`): the ACLs let no other principal join it, so no agent can stall it.
      // A short session: a replica that died (SIGKILL, no LeaveGroup) holds its partitions until
      // the broker stops waiting for its heartbeat, and a restarted replica cannot join before
      // then. kafkajs' 30 s default kept a restarted service from answering for about as long.
      consumer: {
        groupId: evaluatorGroupId(connection, namespace),
        allowAutoTopicCreation: false,
        sessionTimeout: EVALUATOR_SESSION_TIMEOUT_MS,
        heartbeatInterval: EVALUATOR_HEARTBEAT_MS,
      },
      producer: { allowAutoTopicCreation: false },
      subscribe: { fromBeginning: false },
      postfixId: '-server',
    }, topicName('policyEvaluationReplies', namespace));
    this.server.addHandler(topicName('policyEvaluations', namespace), (data: unknown) => this.handle(data), false);
  }

  private async handle(data: unknown) {
    let reply: KafkaEvaluateReply;
    try {
      const parsed = KafkaEvaluateRequest.safeParse(data);
      if (!parsed.success) throw new PolicyError('POLICY.INVALID_REQUEST', { fields: parsed.error.issues.map((i) => ({ field: i.path.map(String).join('.') || '(body)', problem: i.message })) });
      const { policySetId, ...request } = parsed.data;
      reply = { ok: true, decision: this.decisions.answer(policySetId, request) };
    } catch (error) {
      const known = error instanceof GatehouseError;
      reply = { ok: false, error: { code: known ? error.code : 'POLICY.INTERNAL', message: known ? error.message : 'the policy service failed' } };
    }
    return of(reply);
  }

  /** Joins the consumer group and starts answering. */
  start(): Promise<void> {
    return new Promise((resolve, reject) => {
      void this.server.listen((error?: unknown) => (error ? reject(error instanceof Error ? error : new Error('kafka evaluator failed to start')) : resolve()));
    });
  }

  stop(): Promise<void> {
    return this.server.close();
  }
}
