import { type DynamicModule, Inject, Logger, Module, type OnModuleDestroy } from '@nestjs/common';
import { APP_FILTER } from '@nestjs/core';
import { DATA_SOURCE, DEAD_LETTERS, type DeadLetterPublisher, KAFKA, KAFKA_ADMIN, PROJECTION_LOGS, type ProjectionLogs, type ServiceConfig, ServiceRuntimeModule } from '@gatehouse/service-runtime';
import { type Admin, type Kafka } from 'kafkajs';
import { type DataSource } from 'typeorm';
import { AuditRuntime } from './audit-runtime.js';
import { AuditStatusController } from './audit-status/audit-status.http.controller.js';
import { type ExportOptions, exportOptionsFromEnv } from './export-config.js';
import { GetDecisionController } from './get-decision/get-decision.http.controller.js';
import { OpenApiController } from './openapi/openapi.http.controller.js';
import { AuditExceptionFilter } from './http/audit-exception.filter.js';
import { AUDIT_EXPORT_MIGRATIONS } from './projection/audit-migrations.js';
import { QueryDecisionsController } from './query-decisions/query-decisions.http.controller.js';
import { RestartExportController } from './restart-export/restart-export.http.controller.js';
import { RunTimelineController } from './run-timeline/run-timeline.http.controller.js';
import { type ExportTelemetry } from './telemetry/export-telemetry.js';
import { AUDIT_RUNTIME, EXPORT_OPTIONS } from './tokens.js';

/** Audit topic to SIEM feeds and a query API over a PostgreSQL projection. */
@Module({})
export class AuditExportModule implements OnModuleDestroy {
  constructor(@Inject(AUDIT_RUNTIME) private readonly runtime: AuditRuntime) {}

  static forRoot(config: ServiceConfig, options: ExportOptions = exportOptionsFromEnv(), telemetry?: ExportTelemetry): DynamicModule {
    const log = new Logger('audit-export');
    return {
      module: AuditExportModule,
      imports: [ServiceRuntimeModule.forRoot({ config, migrations: AUDIT_EXPORT_MIGRATIONS })],
      // The list route is declared before `:id` so `/v1/decisions` is never read as an id.
      controllers: [QueryDecisionsController, GetDecisionController, RunTimelineController, RestartExportController, AuditStatusController, OpenApiController],
      providers: [
        { provide: EXPORT_OPTIONS, useValue: options },
        {
          provide: AUDIT_RUNTIME,
          inject: [KAFKA, KAFKA_ADMIN, DATA_SOURCE, DEAD_LETTERS, PROJECTION_LOGS],
          useFactory: (kafka: Kafka, admin: Admin, dataSource: DataSource, deadLetters: DeadLetterPublisher, logs: ProjectionLogs) => {
            const runtime = new AuditRuntime({
              kafka,
              logs,
              deadLetters: (poison) => deadLetters.publish(poison),
              admin,
              dataSource,
              schema: config.database.schema,
              namespace: config.topicNamespace,
              scaleOut: config.scaleOut,
              export: options,
              ...(telemetry ? { telemetry } : {}),
              log: (level, message, extra) => {
                const line = extra ? `${message} ${JSON.stringify(extra)}` : message;
                if (level === 'error') log.error(line);
                else if (level === 'warn') log.warn(line);
                else log.log(line);
              },
            });
            runtime.start();
            return runtime;
          },
        },
        { provide: APP_FILTER, useClass: AuditExceptionFilter },
      ],
    };
  }

  /** Before the runtime closes the database and the Kafka admin. */
  async onModuleDestroy(): Promise<void> {
    await this.runtime.stop();
  }
}
