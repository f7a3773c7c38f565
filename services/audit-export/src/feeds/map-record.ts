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
