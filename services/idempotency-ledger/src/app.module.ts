import { type DynamicModule, Inject, Module, type OnModuleDestroy } from '@nestjs/common';
import { APP_FILTER } from '@nestjs/core';
import { topicName } from '@gatehouse/contracts';
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
import { CompleteKeyController } from './complete-key/complete-key.http.controller.js';
import { EchoController } from './echo/echo.http.controller.js';
import { KeyExpiry } from './expire-keys/key-expiry.js';
import { ConsumeRateController } from './consume-rate/consume-rate.http.controller.js';
import { systemClock } from './engine/ledger-port.js';
import { LedgerEngine } from './engine/ledger-engine.js';
import { FailKeyController } from './fail-key/fail-key.http.controller.js';
import { GetKeyController } from './get-key/get-key.http.controller.js';
import { LedgerExceptionFilter } from './http/ledger-exception.filter.js';
import { type LedgerOptions, ledgerOptionsFromEnv } from './ledger-config.js';
import { LedgerStatusController } from './ledger-status/ledger-status.http.controller.js';
import { OpenApiController } from './openapi/openapi.http.controller.js';
import { LEDGER_MIGRATIONS, ledgerProjection } from '@gatehouse/ledger-projection';
import { ReconcileKeyController } from './reconcile-key/reconcile-key.http.controller.js';
import { ReserveKeyController } from './reserve-key/reserve-key.http.controller.js';
import { ResolveKeyController } from './resolve-key/resolve-key.http.controller.js';
import { LedgerRefusals } from './http/refusals.js';
import { LEDGER_CLOCK, LEDGER_ENGINE, LEDGER_OPTIONS, LEDGER_REFUSALS } from './tokens.js';

/** Exactly-once tool execution and shared rate limits across processes. */
@Module({})
export class LedgerModule implements OnModuleDestroy {
  constructor(@Inject(LEDGER_ENGINE) private readonly engine: LedgerEngine) {}

  static forRoot(config: ServiceConfig, options: LedgerOptions = ledgerOptionsFromEnv()): DynamicModule {
    return {
      module: LedgerModule,
      imports: [ServiceRuntimeModule.forRoot({ config, migrations: LEDGER_MIGRATIONS })],
      controllers: [
        ReserveKeyController,
        CompleteKeyController,
        FailKeyController,
        ReconcileKeyController,
        ResolveKeyController,
        GetKeyController,
        ConsumeRateController,
        LedgerStatusController,
        EchoController,
        OpenApiController,
      ],
      providers: [
        { provide: LEDGER_OPTIONS, useValue: options },
        { provide: LEDGER_CLOCK, useValue: systemClock },
        { provide: LEDGER_REFUSALS, useValue: new LedgerRefusals() },
        {
          provide: LEDGER_ENGINE,
          // KAFKA_ADMIN first: start-up fails with KAFKA.UNAVAILABLE when no broker answers in time.
          inject: [KAFKA, KAFKA_ADMIN, PROJECTION_LOGS, DEAD_LETTERS, DATA_SOURCE],
          // The projection is bound to its topic's log first: rows of another log are dropped, and the
          // start-up replay writes them again from this one before anything is answered. A log that
          // changes under the running service stops the engine (a restart rebuilds).
          useFactory: async (kafka: Kafka, _admin: unknown, logs: ProjectionLogs, deadLetters: DeadLetterPublisher, dataSource: DataSource) => {
            const projection = await foldProjection(config, logs, dataSource, ledgerProjection(options.keyring), topicName('ledger', config.topicNamespace), {
              onUnapplied: (poison) => deadLetters.publish(poison),
            });
            const engine = await LedgerEngine.start({
              kafka,
              namespace: config.topicNamespace,
              signingKey: options.signingKey,
              keyring: options.keyring,
              ...projection,
              decisionDeadlineMs: options.decisionDeadlineMs,
              snapshotIntervalMs: config.foldSnapshotIntervalMs,
              checkpointIntervalMs: options.checkpointIntervalMs,
              log: nestFoldLog('ledger'),
            });
            // Stopped again should a later provider fail to start (createServiceApp).
            return closeIfStartFails(logs.stopOnChange(engine), (e) => e.stop());
          },
        },
        // A scaled-out replica answers a request for another replica's partition through its owner.
        ownerForwarderProvider(config, ledgerProjection(options.keyring).name, topicName('ledger', config.topicNamespace), options.decisionDeadlineMs + 1_000),
        KeyExpiry,
        { provide: APP_FILTER, useClass: LedgerExceptionFilter },
      ],
    };
  }

  /** Before the runtime closes the database and the Kafka admin: stop tailing, answer waiting writers. */
  async onModuleDestroy(): Promise<void> {
    await this.engine.stop();
  }
}
