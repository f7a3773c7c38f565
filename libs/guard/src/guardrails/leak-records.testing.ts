import { type AuditLogger } from '../audit/audit-logger.js';
import { toDecisionEvent } from '../audit/to-decision-event.js';
import { type AuditEvent } from '../audit/types.js';

const UUID = /[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}/g;
const ISO_TIME = /\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:\.\d+)?Z/g;

/**
 * The text with random ids and times masked, to search it for a leaked fragment: a UUID holds "4242" or "500"
 * now and then, which made leak tests fail on records that leaked nothing.
 */
export function withoutRandomIds(text: string): string {
  return text.replace(UUID, '<uuid>').replace(ISO_TIME, '<time>');
}

/**
 * Everything of record, as one string to search for a leaked fragment: the logger's events, what its sink got,
 * and the SIEM event each maps to, random ids and times masked.
 */
export function recordsOf(audit: AuditLogger, exported: readonly AuditEvent[]): string {
  const siem = exported.map((e) => toDecisionEvent(e, { source: 'guard:test', defaultTenant: 'acme' }));
  return withoutRandomIds(JSON.stringify([audit.events(), exported, siem]));
}
