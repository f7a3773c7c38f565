import { type DynamicModule, Inject, Module, type OnModuleDestroy } from '@nestjs/common';
import { APP_FILTER } from '@nestjs/core';
import { topicName } from '@gatehouse/contracts';
import { APPROVAL_MIGRATIONS, approvalProjection } from '@gatehouse/approval-projection';
import {
  closeIfStartFails,
  DATA_SOURCE,
  DEAD_LETTERS,
  type DeadLetterPublisher,
  foldProjection,
  KAFKA,
  KAFKA_ADMIN,
  nestFoldLog,
  ownerForwarderProvider,
  PROJECTION_LOGS,
  type ProjectionLogs,
  type ServiceConfig,
  ServiceRuntimeModule,
} from '@gatehouse/service-runtime';
import { type Kafka } from 'kafkajs';
import { type DataSource } from 'typeorm';
import { type ApprovalOptions, approvalOptionsFromEnv } from './approval-config.js';
import { ApprovalEventsController } from './approval-events/approval-events.http.controller.js';
import { ReplicaChanges } from './approval-events/replica-changes.js';
import { ApprovalStatusController } from './approval-status.http.controller.js';
import { DecideApprovalController } from './decide-approval/decide-approval.http.controller.js';
import { ApprovalEngine } from './engine/approval-engine.js';
import { GetApprovalController } from './get-approval/get-approval.http.controller.js';
import { ApprovalExceptionFilter } from './http/approval-exception.filter.js';
import { InboxController } from './inbox/inbox.http.controller.js';
import { ListApprovalsController } from './list-approvals/list-approvals.http.controller.js';
import { REVIEWER_NOTIFIER, type ReviewerNotifier, reviewerNotifierProvider } from './notify-reviewers/reviewer-notifier.js';
import { WebhookDeliveries1768000000000 } from './notify-reviewers/webhook-deliveries.migration.js';
import { OpenApiController } from './openapi/openapi.http.controller.js';
import { APPROVAL_ENGINE, APPROVAL_OPTIONS, REPLICA_CHANGES } from './tokens.js';

/** Reviewer REST API, event stream and web inbox over the approvals topic. */
@Module({})
export class ApprovalModule implements OnModuleDestroy {
  constructor(
    @Inject(APPROVAL_ENGINE) private readonly engine: ApprovalEngine,
    @Inject(REVIEWER_NOTIFIER) private readonly notifier: ReviewerNotifier,
    @Inject(REPLICA_CHANGES) private readonly replicaChanges: ReplicaChanges | null,
  ) {}

  static forRoot(config: ServiceConfig, options: ApprovalOptions = approvalOptionsFromEnv()): DynamicModule {
    return {
      module: ApprovalModule,
      imports: [ServiceRuntimeModule.forRoot({ config, migrations: [...APPROVAL_MIGRATIONS, WebhookDeliveries1768000000000] })],
      controllers: [ListApprovalsController, ApprovalEventsController, ApprovalStatusController, GetApprovalController, DecideApprovalController, OpenApiController, InboxController],
      providers: [
        { provide: APPROVAL_OPTIONS, useValue: options },
        reviewerNotifierProvider(options.webhooks, config.database.schema),
        {
          provide: APPROVAL_ENGINE,
          // KAFKA_ADMIN first: start-up fails with KAFKA.UNAVAILABLE when no broker answers in time.
          inject: [KAFKA, KAFKA_ADMIN, PROJECTION_LOGS, DEAD_LETTERS, DATA_SOURCE, REVIEWER_NOTIFIER],
          // The projection is bound to its topic's log first: rows of another log are dropped, and the
          // start-up replay writes them again from this one before anything is answered. A log that
          // changes under the running service stops the engine (a restart rebuilds).
          useFactory: async (kafka: Kafka, _admin: unknown, logs: ProjectionLogs, deadLetters: DeadLetterPublisher, dataSource: DataSource, notifier: ReviewerNotifier) => {
            const spec = approvalProjection(options.keyring, { retainMs: options.retainMs });
            const projection = await foldProjection(config, logs, dataSource, spec, topicName('approvals', config.topicNamespace), {
              onUnapplied: (poison) => deadLetters.publish(poison),
            });
            const engine = await ApprovalEngine.start({
              kafka,
              namespace: config.topicNamespace,
              signingKey: options.signingKey,
              keyring: options.keyring,
              ...projection,
              decisionDeadlineMs: options.decisionDeadlineMs,
              expirySweepMs: options.expirySweepMs,
              grantTtlMs: options.grantTtlMs,
              retainMs: options.retainMs,
              snapshotIntervalMs: config.foldSnapshotIntervalMs,
              log: nestFoldLog('approval'),
              // Reviewer webhooks: live changes only, once committed (a start-up read sends nothing).
              onCommitted: (change) => notifier.notice(change),
            });
            // Stopped again should a later provider fail to start (createServiceApp).
            return closeIfStartFails(logs.stopOnChange(engine), (e) => e.stop());
          },
        },
        {
          provide: REPLICA_CHANGES,
          inject: [APPROVAL_ENGINE, DATA_SOURCE],
          // Scaled out, each replica's event stream carries every replica's changes (replica-changes.ts).
          useFactory: async (engine: ApprovalEngine, dataSource: DataSource) => {
            if (!config.scaleOut) return null;
            const changes = await ReplicaChanges.start({ dataSource, schema: config.database.schema, replicaId: config.scaleOut.replicaId, relay: (change) => engine.relay(change), log: nestFoldLog('approval') });
            engine.subscribeOwn((change) => changes.announce(change));
            return closeIfStartFails(changes, (c) => c.stop());
          },
        },
        // A scaled-out replica answers a decision on another replica's partition through its owner.
        ownerForwarderProvider(config, approvalProjection(options.keyring, { retainMs: options.retainMs }).name, topicName('approvals', config.topicNamespace), options.decisionDeadlineMs + 1_000),
        { provide: APP_FILTER, useClass: ApprovalExceptionFilter },
      ],
    };
  }

  /** Before the runtime closes the database and the Kafka admin: stop tailing, answer waiting reviewers. */
  async onModuleDestroy(): Promise<void> {
    await this.replicaChanges?.stop();
    await this.engine.stop();
    // Then the webhooks under way end, recorded, before the runtime closes the database.
    await this.notifier.stop();
  }
}
