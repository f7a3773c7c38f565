import { Controller, Get, Inject, Param } from '@nestjs/common';
import { DATA_SOURCE, type ServiceConfig, SERVICE_CONFIG } from '@gatehouse/service-runtime';
import { type DataSource } from 'typeorm';
import { parseRequest } from '../http/parse-request.js';
import { RunParams, type RunTimeline, runTimeline } from './run-timeline.js';

@Controller('v1/runs')
export class RunTimelineController {
  constructor(
    @Inject(DATA_SOURCE) private readonly dataSource: DataSource,
    @Inject(SERVICE_CONFIG) private readonly config: ServiceConfig,
  ) {}

  /** 200 the run's decisions in log order (empty when none). */
  @Get(':runId/timeline')
  async timeline(@Param('runId') runId: string): Promise<RunTimeline> {
    const params = parseRequest(RunParams, { runId });
    return runTimeline(this.dataSource.manager, this.config.database.schema, params.runId);
  }
}
