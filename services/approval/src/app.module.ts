import { type DynamicModule, Inject, Module, type OnModuleDestroy } from '@nestjs/common';
import { APP_FILTER } from '@nestjs/core';
import { topicName } from '@gatehouse/contracts';
import { APPROVAL_MIGRATIONS, approvalProjection } from '@gatehouse/approval-projection';
import { closeIfStartFails, DEAD_LETTERS, type DeadLetterPublisher, KAFKA, KAFKA_ADMIN, nestFoldLog, PROJECTION_LOGS, type ProjectionLogs, type ServiceConfig, ServiceRuntimeModule } from '@gatehouse/service-runtime';
import { type Kafka } from 'kafkajs';
import { type ApprovalOptions, approvalOptionsFromEnv } from './approval-config.js';
import { ApprovalEventsController } from './approval-events/approval-events.http.controller.js';
import { ApprovalStatusController } from './approval-status.http.controller.js';
import { DecideApprovalController } from './decide-approval/decide-approval.http.controller.js';
import { ApprovalEngine } from './engine/approval-engine.js';
import { GetApprovalController } from './get-approval/get-approval.http.controller.js';
import { ApprovalExceptionFilter } from './http/approval-exception.filter.js';
import { InboxController } from './inbox/inbox.http.controller.js';
import { ListApprovalsController } from './list-approvals/list-approvals.http.controller.js';
import { OpenApiController } from './openapi/openapi.http.controller.js';
import { APPROVAL_ENGINE, APPROVAL_OPTIONS } from './tokens.js';

/** Reviewer REST API, event stream and web inbox over the approvals topic. */
@Module({})
export class ApprovalModule implements OnModuleDestroy {
  constructor(@Inject(APPROVAL_ENGINE) private readonly engine: ApprovalEngine) {}

  static forRoot(config: ServiceConfig, options: ApprovalOptions = approvalOptionsFromEnv()): DynamicModule {
    return {
      module: ApprovalModule,
      imports: [ServiceRuntimeModule.forRoot({ config, migrations: APPROVAL_MIGRATIONS })],
      controllers: [ListApprovalsController, ApprovalEventsController, ApprovalStatusController, GetApprovalController, DecideApprovalController, OpenApiController, InboxController],
      providers: [
        { provide: APPROVAL_OPTIONS, useValue: options },
        {
          provide: APPROVAL_ENGINE,
          // KAFKA_ADMIN first: start-up fails with KAFKA.UNAVAILABLE when no broker answers in time.
          inject: [KAFKA, KAFKA_ADMIN, PROJECTION_LOGS, DEAD_LETTERS],
          // The projection is bound to its topic's log first: rows of another log are dropped, and the
          // start-up replay writes them again from this one before anything is answered. A log that
          // changes under the running service stops the engine (a restart rebuilds).
          useFactory: async (kafka: Kafka, _admin: unknown, logs: ProjectionLogs, deadLetters: DeadLetterPublisher) =>
            // Stopped again should a later provider fail to start (createServiceApp).
            closeIfStartFails(
              logs.stopOnChange(
                await ApprovalEngine.start({
                  kafka,
                  namespace: config.topicNamespace,
                  signingKey: options.signingKey,
                  keyring: options.keyring,
                  projection: await logs.projectionWriter(approvalProjection(options.keyring, { retainMs: options.retainMs }), topicName('approvals', config.topicNamespace), {
                    onUnapplied: (poison) => deadLetters.publish(poison),
                  }),
                  decisionDeadlineMs: options.decisionDeadlineMs,
                  expirySweepMs: options.expirySweepMs,
                  grantTtlMs: options.grantTtlMs,
                  retainMs: options.retainMs,
                  snapshotIntervalMs: config.foldSnapshotIntervalMs,
                  log: nestFoldLog('approval'),
                }),
              ),
              (engine) => engine.stop(),
            ),
        },
        { provide: APP_FILTER, useClass: ApprovalExceptionFilter },
      ],
    };
  }

  /** Before the runtime closes the database and the Kafka admin: stop tailing, answer waiting reviewers. */
  async onModuleDestroy(): Promise<void> {
    await this.engine.stop();
  }
}
