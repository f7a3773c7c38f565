import { type DynamicModule, Inject, Module, type OnModuleDestroy } from '@nestjs/common';
import { APP_FILTER } from '@nestjs/core';
import { topicName } from '@gatehouse/contracts';
import { closeIfStartFails, DEAD_LETTERS, type DeadLetterPublisher, KAFKA, KAFKA_ADMIN, nestFoldLog, PROJECTION_LOGS, type ProjectionLogs, type ServiceConfig, ServiceRuntimeModule } from '@gatehouse/service-runtime';
import { type Kafka } from 'kafkajs';
import { DecideController } from './decide/decide.http.controller.js';
import { PolicyKafkaEvaluator } from './decide/kafka-evaluator.js';
import { PolicyDecisions } from './decide/policy-decisions.js';
import { PolicyEngine } from './engine/policy-engine.js';
import { PolicyExceptionFilter } from './http/policy-exception.filter.js';
import { type PolicyOptions, policyOptionsFromEnv } from './policy-config.js';
import { PolicyStatusController } from './policy-status.http.controller.js';
import { OpenApiController } from './openapi/openapi.http.controller.js';
import { POLICY_MIGRATIONS, policyProjection } from '@gatehouse/policy-projection';
import { PublishVersionController } from './publish-version/publish-version.http.controller.js';
import { ReadVersionsController } from './read-versions/read-versions.http.controller.js';
import { POLICY_DECISIONS, POLICY_ENGINE, POLICY_EVALUATOR, POLICY_OPTIONS } from './tokens.js';

/** Versioned policy bundles: validate, version, sign and publish; list, diff; simulate, explain, evaluate. */
@Module({})
export class PolicyModule implements OnModuleDestroy {
  constructor(
    @Inject(POLICY_ENGINE) private readonly engine: PolicyEngine,
    @Inject(POLICY_EVALUATOR) private readonly evaluator: PolicyKafkaEvaluator | undefined,
  ) {}

  /** `kafkaEvaluator: false` leaves out the Kafka request/reply transport (REST only). */
  static forRoot(config: ServiceConfig, options: PolicyOptions = policyOptionsFromEnv(), transports: { kafkaEvaluator?: boolean } = {}): DynamicModule {
    return {
      module: PolicyModule,
      imports: [ServiceRuntimeModule.forRoot({ config, migrations: POLICY_MIGRATIONS })],
      controllers: [PublishVersionController, ReadVersionsController, DecideController, PolicyStatusController, OpenApiController],
      providers: [
        { provide: POLICY_OPTIONS, useValue: options },
        {
          provide: POLICY_ENGINE,
          inject: [KAFKA, KAFKA_ADMIN, PROJECTION_LOGS, DEAD_LETTERS],
          // The projection is bound to its topic's log first: rows of another log are dropped, and the
          // start-up replay writes them again from this one before anything is answered. A log that
          // changes under the running service stops the engine (a restart rebuilds).
          useFactory: async (kafka: Kafka, _admin: unknown, logs: ProjectionLogs, deadLetters: DeadLetterPublisher) =>
            // Stopped again should a later provider fail to start (createServiceApp).
            closeIfStartFails(
              logs.stopOnChange(
                await PolicyEngine.start({
                  kafka,
                  namespace: config.topicNamespace,
                  signingKey: options.signingKey,
                  keyring: options.keyring,
                  projection: await logs.projectionWriter(policyProjection(options.keyring), topicName('policies', config.topicNamespace), {
                    onUnapplied: (poison) => deadLetters.publish(poison),
                  }),
                  snapshotIntervalMs: config.foldSnapshotIntervalMs,
                  log: nestFoldLog('policy'),
                }),
              ),
              (engine) => engine.stop(),
            ),
        },
        { provide: POLICY_DECISIONS, inject: [POLICY_ENGINE], useFactory: (engine: PolicyEngine) => new PolicyDecisions(engine) },
        {
          provide: POLICY_EVALUATOR,
          inject: [POLICY_DECISIONS, PROJECTION_LOGS],
          useFactory: async (decisions: PolicyDecisions, logs: ProjectionLogs) => {
            if (transports.kafkaEvaluator === false) return undefined;
            const evaluator = new PolicyKafkaEvaluator(config.kafka, config.topicNamespace, decisions);
            await evaluator.start();
            // Its bundles are of the log the projection is bound to: none are evaluated after that log changed.
            return logs.stopOnChange(evaluator);
          },
        },
        { provide: APP_FILTER, useClass: PolicyExceptionFilter },
      ],
    };
  }

  async onModuleDestroy(): Promise<void> {
    await this.evaluator?.stop().catch(() => undefined);
    await this.engine.stop();
  }
}
