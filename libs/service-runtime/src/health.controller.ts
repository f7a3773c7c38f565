import { Controller, Get, Inject, Res } from '@nestjs/common';
import { type Admin } from 'kafkajs';
import { type DataSource } from 'typeorm';
import { type ServiceConfig } from './config.js';
import { checkHealth, type HealthReport } from './health.js';
import { DATA_SOURCE, KAFKA_ADMIN, SERVICE_CONFIG } from './tokens.js';

interface StatusResponse {
  status(code: number): StatusResponse;
}

@Controller('health')
export class HealthController {
  constructor(
    @Inject(SERVICE_CONFIG) private readonly config: ServiceConfig,
    @Inject(KAFKA_ADMIN) private readonly admin: Admin,
    @Inject(DATA_SOURCE) private readonly dataSource: DataSource,
  ) {}

  /** 200 when the broker and the database answer, 503 otherwise. */
  @Get()
  async health(@Res({ passthrough: true }) res: StatusResponse): Promise<HealthReport> {
    const report = await checkHealth(this.config.service.name, this.admin, this.dataSource);
    res.status(report.status === 'ok' ? 200 : 503);
    return report;
  }
}
