import { createHash } from 'node:crypto';
import { createEvent, DecisionRecordedV1 } from '@gatehouse/contracts';
import { toCef } from './cef.js';
import { type AuditRecord, type ExportLine, type FeedFormat } from './export-line.js';
import { toOcsfLine } from './ocsf.js';

/** Maps one record to a line of `format`. */
export function toLine(record: AuditRecord, format: FeedFormat): ExportLine {
  let text: string;
  switch (format) {
    case 'ocsf':
      text = toOcsfLine(record);
      break;
    case 'cef':
      text = toCef(record);
      break;
    default: {
      const exhaustive: never = format;
      text = exhaustive;
    }
  }
  const { event } = record;
  return {
    eventId: event.id,
    format,
    text,
    partition: record.partition,
    offset: record.offset,
    logTime: record.logTime,
    outcome: event.payload.outcome,
    boundary: event.payload.boundary,
  };
}

/** The code of audit-export's own decision on a record whose source its checkpoints may not claim. */
export const FORBIDDEN_AUDIT_SOURCE = 'SECURITY.FORBIDDEN_AUDIT_SOURCE';

/** A uuid derived from `seed`: a re-export writes the same security line, byte for byte. */
function derivedUuid(seed: string): string {
  const hex = createHash('sha256').update(seed).digest('hex');
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-5${hex.slice(13, 16)}-${((parseInt(hex.slice(16, 17), 16) & 0x3) | 0x8).toString(16)}${hex.slice(17, 20)}-${hex.slice(20, 32)}`;
}

/**
 * audit-export's own decision on a forbidden record: a `SECURITY.FORBIDDEN_AUDIT_SOURCE` denial
 * in the record's tenant, right after the record's line, so a SIEM rule on SECURITY.* codes sees
 * it (the record's own line keeps its code, which may read like an honest grant). Written into the
 * feeds only, never onto the audit topic: the service signs nothing, and a report of a report
 * would loop. Deterministic (ids derived from the record's, times its log time).
 */
export function securityRecord(record: AuditRecord): AuditRecord | undefined {
  const verification = record.verification;
  if (verification?.status !== 'forbidden') return undefined;
  const { event } = record;
  const security = createEvent(
    DecisionRecordedV1,
    {
      id: derivedUuid(`gatehouse:forbidden-audit-source:${event.id}`),
      time: record.logTime.toISOString(),
      source: 'service:audit-export',
      tenant: event.tenant,
      subject: event.subject,
      causationId: event.id,
      ...(event.correlationId !== undefined && { correlationId: event.correlationId }),
    },
    {
      decisionId: derivedUuid(`gatehouse:forbidden-audit-source-decision:${event.id}`),
      boundary: event.payload.boundary,
      outcome: 'denied',
      code: FORBIDDEN_AUDIT_SOURCE,
      reason: `an audit record was vouched for only by a checkpoint that may not claim its source or tenant (${verification.reason ?? 'forbidden'})`,
      redactedPaths: [],
      ...(event.payload.runId !== undefined && { runId: event.payload.runId }),
    },
  );
  return { event: security, topic: record.topic, partition: record.partition, offset: record.offset, logTime: record.logTime };
}

/** The lines one record exports to: its own, and for a forbidden record the security line after it. */
export function exportLines(record: AuditRecord, format: FeedFormat): ExportLine[] {
  const security = securityRecord(record);
  return security ? [toLine(record, format), toLine(security, format)] : [toLine(record, format)];
}
