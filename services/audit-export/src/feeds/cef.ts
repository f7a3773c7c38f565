import { type AuditRecord } from './export-line.js';
import { outcomeMapping } from './ocsf.js';

/** Product version in the CEF header: the feed's format version, not the build. */
export const CEF_DEVICE_VERSION = '1';

/** CEF header field: `\` and `|` escaped; line breaks cannot appear in a header and become spaces. */
export function escapeCefHeader(value: string): string {
  return value.replace(/\\/g, '\\\\').replace(/\|/g, '\\|').replace(/\r\n|\r|\n/g, ' ');
}

/** CEF extension value: `\`, `=` escaped, line breaks written as `\n` / `\r`. */
export function escapeCefValue(value: string): string {
  return value.replace(/\\/g, '\\\\').replace(/=/g, '\\=').replace(/\r/g, '\\r').replace(/\n/g, '\\n');
}

/**
 * One CEF:0 line for syslog. Extension keys are written in a fixed order and every value
 * comes from the record, so the line is deterministic. The reason is escaped as data.
 */
export function toCef(record: AuditRecord): string {
  const { event } = record;
  const p = event.payload;
  const out = outcomeMapping(p.outcome);
  const policy = p.policy ? `${p.policy.bundleId}@${p.policy.revision}${p.policy.ruleId ? `#${p.policy.ruleId}` : ''}` : undefined;
  const chain = event.chain ? `${event.chain.producer}:${event.chain.seq}:${event.chain.prevHash ?? '-'}` : undefined;
  const header = ['CEF:0', 'gatehouse', 'gatehouse', CEF_DEVICE_VERSION, p.code, `${p.boundary} ${p.outcome}`, String(out.cefSeverity)]
    .map((field, i) => (i === 0 ? field : escapeCefHeader(field)))
    .join('|');
  const extensions: [string, string | number | undefined][] = [
    ['rt', Date.parse(event.time)],
    ['externalId', event.id],
    ['act', p.outcome],
    ['outcome', out.cefOutcome],
    ['cat', p.boundary],
    ['reason', p.reason],
    ['suser', p.actor?.id],
    ['spriv', p.actor?.role],
    ['cs1Label', 'tenant'],
    ['cs1', event.tenant],
    ['cs2Label', 'policy'],
    ['cs2', policy],
    ['cs3Label', 'runId'],
    ['cs3', p.runId],
    ['cs4Label', 'agentId'],
    ['cs4', p.agentId],
    ['cs5Label', 'toolId'],
    ['cs5', p.toolId],
    ['cs6Label', 'chain'],
    ['cs6', chain],
    ['flexString1Label', 'decisionId'],
    ['flexString1', p.decisionId],
    ['flexString2Label', 'correlationId'],
    ['flexString2', event.correlationId],
    ['cn1Label', 'kafkaPartition'],
    ['cn1', record.partition],
    ['cn2Label', 'kafkaOffset'],
    ['cn2', record.offset],
    ['deviceReceiptTime', record.logTime.getTime()],
    // CEF has no standard field for who vouched for a record: two vendor keys (absent when not judged).
    ['gatehouseVerification', record.verification?.status],
    ['gatehouseVerificationReason', record.verification?.reason ?? undefined],
  ];
  // A label without its value says nothing: drop both.
  const present = extensions.filter(([key, value], i) => {
    if (value === undefined) return false;
    if (key.endsWith('Label')) return extensions[i + 1]?.[1] !== undefined;
    return true;
  });
  return `${header}|${present.map(([key, value]) => `${key}=${escapeCefValue(String(value))}`).join(' ')}`;
}
