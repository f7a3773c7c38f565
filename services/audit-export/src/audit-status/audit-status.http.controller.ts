import { Controller, Get, Headers, Inject } from '@nestjs/common';
import { type AuditRuntime, type AuditStatus } from '../audit-runtime.js';
import { type ExportOptions } from '../export-config.js';
import { AuditError } from '../errors.js';
import { authenticate } from '../http/reader-auth.js';
import { AUDIT_RUNTIME, EXPORT_OPTIONS } from '../tokens.js';

/** `GET /v1/audit-status`: where this process's projection began and how far it and the export are behind. */
@Controller('v1/audit-status')
export class AuditStatusController {
  constructor(
    @Inject(AUDIT_RUNTIME) private readonly runtime: AuditRuntime,
    @Inject(EXPORT_OPTIONS) private readonly options: ExportOptions,
  ) {}

  /**
   * 200 the status: offsets and counts across all tenants, no decision content | 401 without an
   * operator's or a reader's API key | 403 for a reader of some tenants only (the counts would
   * tell it how busy the others are) | 503 when the broker or the database does not answer.
   */
  @Get()
  status(@Headers('authorization') authorization: string | undefined): Promise<AuditStatus> {
    const operators = this.options.operators ?? [];
    const principal = authenticate(authorization, [...operators, ...(this.options.readers ?? [])]);
    const reader = this.options.readers?.find((r) => r === principal);
    if (!operators.includes(principal) && reader?.tenants !== '*') throw new AuditError('AUDIT.FORBIDDEN');
    return this.runtime.status();
  }
}
