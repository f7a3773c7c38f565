import { type DynamicModule, Inject, Module, type OnApplicationShutdown } from '@nestjs/common';
import { APP_GUARD } from '@nestjs/core';
import { createKafkaClient } from '@gatehouse/kafka';
import { type Admin, type Kafka } from 'kafkajs';
import { type DataSource } from 'typeorm';
import { ENV, type ServiceConfig } from './config.js';
import { closeIfStartFails } from './create-app.js';
import { type MigrationClass, openServiceDatabase } from './database.js';
import { connectKafkaAdmin } from './health.js';
import { HealthController } from './health.controller.js';
import { createDeadLetterPublisher, type DeadLetterPublisher } from './dead-letters.js';
import { nestFoldLog } from './fold-log.js';
import { ProjectionLogs } from './projection/projection-logs.js';
import { ProjectionLogGuard } from './projection-log.guard.js';
import { DATA_SOURCE, DEAD_LETTERS, KAFKA, KAFKA_ADMIN, PROJECTION_LOGS, SERVICE_CONFIG } from './tokens.js';

export interface ServiceRuntimeOptions {
  readonly config: ServiceConfig;
  /** The service's TypeORM migrations, in order. */
  readonly migrations: readonly MigrationClass[];
}

/**
 * What every gatehouse service shares: configuration, the Kafka client, the migrated
 * database, the health endpoint, and the projection logs (which log each projection's rows came
 * from; routes refuse while one is not bound). Global, so feature modules can inject the tokens.
 */
@Module({})
export class ServiceRuntimeModule implements OnApplicationShutdown {
  constructor(
    @Inject(DATA_SOURCE) private readonly dataSource: DataSource,
    @Inject(KAFKA_ADMIN) private readonly admin: Admin,
    @Inject(DEAD_LETTERS) private readonly deadLetters: DeadLetterPublisher,
    @Inject(PROJECTION_LOGS) private readonly projectionLogs: ProjectionLogs,
  ) {}

  static forRoot(options: ServiceRuntimeOptions): DynamicModule {
    return {
      module: ServiceRuntimeModule,
      global: true,
      controllers: [HealthController],
      providers: [
        { provide: SERVICE_CONFIG, useValue: options.config },
        { provide: KAFKA, useFactory: () => createKafkaClient(options.config.kafka) },
        // Start-up fails (non-zero exit) when the broker does not answer within the deadline.
        { provide: KAFKA_ADMIN, inject: [KAFKA], useFactory: async (kafka: Kafka) => closeIfStartFails(await connectKafkaAdmin(kafka, options.config.kafkaConnectDeadlineMs), (admin) => admin.disconnect()) },
        // Where the service's folds park the records they cannot apply (libs/kafka ACLs: services write it).
        { provide: DEAD_LETTERS, inject: [KAFKA], useFactory: (kafka: Kafka) => closeIfStartFails(createDeadLetterPublisher(kafka, options.config.topicNamespace, options.config.service.name), (letters) => letters.close()) },
        {
          provide: DATA_SOURCE,
          useFactory: async () =>
            closeIfStartFails(
              await openServiceDatabase({
                url: options.config.database.url,
                schema: options.config.database.schema,
                migrations: options.migrations,
                passwordFile: process.env[ENV.databasePasswordFile],
              }),
              (dataSource) => dataSource.destroy(),
            ),
        },
        {
          provide: PROJECTION_LOGS,
          inject: [KAFKA_ADMIN, DATA_SOURCE],
          useFactory: (admin: Admin, dataSource: DataSource) =>
            closeIfStartFails(new ProjectionLogs({ admin, dataSource, schema: options.config.database.schema, log: nestFoldLog('projection-log') }), (logs) => logs.close()),
        },
        { provide: APP_GUARD, useClass: ProjectionLogGuard },
      ],
      exports: [SERVICE_CONFIG, KAFKA, KAFKA_ADMIN, DATA_SOURCE, DEAD_LETTERS, PROJECTION_LOGS],
    };
  }

  async onApplicationShutdown(): Promise<void> {
    await this.projectionLogs.close();
    await this.deadLetters.close();
    await this.admin.disconnect();
    if (this.dataSource.isInitialized) await this.dataSource.destroy();
  }
}
