import { Controller, Get, Inject, Res } from '@nestjs/common';
import { type Admin } from 'kafkajs';
import { type DataSource } from 'typeorm';
import { type ServiceConfig } from './config.js';
import { checkHealth, type HealthReport } from './health.js';
import { type ProjectionLogs } from './projection/projection-logs.js';
import { DATA_SOURCE, KAFKA_ADMIN, PROJECTION_LOGS, SERVICE_CONFIG } from './tokens.js';

interface StatusResponse {
  status(code: number): StatusResponse;
}

@Controller('health')
export class HealthController {
  constructor(
    @Inject(SERVICE_CONFIG) private readonly config: ServiceConfig,
    @Inject(KAFKA_ADMIN) private readonly admin: Admin,
    @Inject(DATA_SOURCE) private readonly dataSource: DataSource,
    @Inject(PROJECTION_LOGS) private readonly projectionLogs: ProjectionLogs,
  ) {}

  /** 200 when the broker and the database answer and every projection is bound to its log, 503 otherwise. */
  @Get()
  async health(@Res({ passthrough: true }) res: StatusResponse): Promise<HealthReport> {
    const report = await checkHealth(this.config.service.name, this.admin, this.dataSource, undefined, this.projectionLogs.health());
    res.status(report.status === 'ok' ? 200 : 503);
    return report;
  }
}
