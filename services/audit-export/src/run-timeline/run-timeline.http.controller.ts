import { Controller, Get, Headers, Inject, Param } from '@nestjs/common';
import { DATA_SOURCE, type ServiceConfig, SERVICE_CONFIG } from '@gatehouse/service-runtime';
import { type DataSource } from 'typeorm';
import { type ExportOptions } from '../export-config.js';
import { parseRequest } from '../http/parse-request.js';
import { authenticate, logRead, tenantScope } from '../http/reader-auth.js';
import { EXPORT_OPTIONS } from '../tokens.js';
import { RunParams, type RunTimeline, runTimeline } from './run-timeline.js';

@Controller('v1/runs')
export class RunTimelineController {
  constructor(
    @Inject(DATA_SOURCE) private readonly dataSource: DataSource,
    @Inject(SERVICE_CONFIG) private readonly config: ServiceConfig,
    @Inject(EXPORT_OPTIONS) private readonly options: ExportOptions,
  ) {}

  /** 200 the run's decisions of the reader's tenants in log order (empty when none) | 401 without a reader's API key. */
  @Get(':runId/timeline')
  async timeline(@Headers('authorization') authorization: string | undefined, @Param('runId') runId: string): Promise<RunTimeline> {
    const reader = authenticate(authorization, this.options.readers ?? []);
    const params = parseRequest(RunParams, { runId });
    const timeline = await runTimeline(this.dataSource.manager, this.config.database.schema, params.runId, tenantScope(reader));
    logRead(reader, 'timeline', timeline.decisions.length);
    return timeline;
  }
}
