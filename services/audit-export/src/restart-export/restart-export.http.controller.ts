import { Body, Controller, Get, Headers, HttpCode, Inject, Logger, Param, Post } from '@nestjs/common';
import { z } from 'zod';
import { type AuditRuntime } from '../audit-runtime.js';
import { AuditError } from '../errors.js';
import { type ExportStatus } from '../export/export-pipeline.js';
import { parseStartPosition } from '../export/start-position.js';
import { parseRequest } from '../http/parse-request.js';
import { authenticate } from '../http/reader-auth.js';
import { type ExportOptions } from '../export-config.js';
import { AUDIT_RUNTIME, EXPORT_OPTIONS } from '../tokens.js';

const RestartBody = z.object({
  from: z.unknown().refine((v) => parseStartPosition(v) !== undefined, 'must be earliest, latest, an ISO 8601 time or { partition: offset }'),
});

@Controller('v1/exports')
export class RestartExportController {
  private readonly log = new Logger('audit-export');

  constructor(
    @Inject(AUDIT_RUNTIME) private readonly runtime: AuditRuntime,
    @Inject(EXPORT_OPTIONS) private readonly options: ExportOptions,
  ) {}

  /**
   * 200 the export's status (`standby` while another replica runs it); an empty list when no sink
   * is configured | 401 without an operator's or a reader's API key.
   */
  @Get()
  list(@Headers('authorization') authorization: string | undefined): ExportStatus[] {
    authenticate(authorization, [...(this.options.operators ?? []), ...(this.options.readers ?? [])]);
    const status = this.runtime.exportStatus();
    return status ? [status] : [];
  }

  /**
   * 200 the new positions: the export stops, its stored offsets move to `from` (back for a
   * re-export, forward to skip) and it resumes from there | 401 without an operator's API key
   * (a jump forward would keep records from the SIEM) | 404 when no such export runs.
   */
  @Post(':name/restart')
  @HttpCode(200)
  async restart(@Headers('authorization') authorization: string | undefined, @Param('name') name: string, @Body() body: unknown): Promise<{ name: string; positions: Record<number, string> }> {
    const operator = authenticate(authorization, this.options.operators ?? []);
    const parsed = parseRequest(RestartBody, body);
    const pipeline = this.runtime.exportPipeline();
    if (!pipeline || pipeline.name !== name) throw new AuditError('AUDIT.EXPORT_NOT_FOUND');
    const position = parseStartPosition(parsed.from);
    if (!position) throw new AuditError('AUDIT.INVALID_REQUEST', { fields: [{ field: 'from', problem: 'invalid' }] });
    const positions = await pipeline.reposition(position);
    this.log.log(`export repositioned {"export":"${name}","by":${JSON.stringify(operator.id)},"to":"${position.kind}"}`);
    return { name, positions };
  }
}
