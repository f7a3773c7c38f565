import { describe, expect, it } from '@jest/globals';
import { decision, record } from '../testing/decisions.js';
import { escapeCefHeader, escapeCefValue, toCef } from './cef.js';
import { toLine } from './map-record.js';
import { toOcsf, toOcsfLine } from './ocsf.js';

describe('OCSF feed', () => {
  it('maps a tool denial to API Activity with the envelope id, time, actor, policy, chain and log position', () => {
    const event = decision({}, { seq: 2, producer: 'guard:bot/1', traceparent: `00-${'1'.repeat(32)}-${'2'.repeat(16)}-01`, time: '2025-06-01T11:59:59.000Z' });
    const ocsf = toOcsf(record(event, 2, '41')) as Record<string, unknown>;
    expect(ocsf).toMatchObject({
      class_uid: 6003,
      category_uid: 6,
      type_uid: 600399,
      time: Date.parse('2025-06-01T11:59:59.000Z'),
      status_id: 2,
      status: 'Failure',
      disposition_id: 2,
      disposition: 'Blocked',
      status_code: 'TOOL.EGRESS_HOST_NOT_DECLARED',
      metadata: { uid: event.id, product: { name: 'gatehouse', vendor_name: 'gatehouse' }, tenant_uid: 'acme', correlation_uid: 'run-1', logged_time: Date.parse('2025-06-01T12:00:00.123Z') },
      actor: { user: { uid: 'user-1', type: 'human' }, app_name: 'support-bot' },
      policy: { uid: 'default', version: '3', name: 'deny-egress' },
      unmapped: {
        chain: { producer: 'guard:bot/1', seq: 2, prev_hash: 'a'.repeat(64) },
        kafka: { topic: 'gatehouse.audit.v1', partition: 2, offset: '41' },
        gatehouse: { decision_id: event.payload.decisionId, run_id: 'run-1' },
      },
    });
  });

  it('maps entry and approval decisions to Authorize Session, and outcomes to status and disposition', () => {
    expect(toOcsf(record(decision({ boundary: 'agent-entry', outcome: 'allowed' })))).toMatchObject({ class_uid: 3003, status_id: 1, disposition_id: 1, severity_id: 1 });
    expect(toOcsf(record(decision({ boundary: 'approval', outcome: 'approval-required' })))).toMatchObject({ class_uid: 3003, status_id: 99, disposition_id: 14 });
    expect(toOcsf(record(decision({ outcome: 'error' })))).toMatchObject({ status_id: 2, disposition_id: 27, severity_id: 4 });
    expect(toOcsf(record(decision({ outcome: 'masked', redactedPaths: ['$.args.ssn'] })))).toMatchObject({ disposition_id: 11, unmapped: { gatehouse: { redacted_paths: ['$.args.ssn'] } } });
  });

  it('never copies attributes and writes a null chain when the event has none', () => {
    const line = toOcsfLine(record(decision({ attributes: { secretCount: 3, note: 'PRIVATE-VALUE' } })));
    expect(line).not.toContain('PRIVATE-VALUE');
    expect(line).not.toContain('secretCount');
    expect(JSON.parse(line).unmapped.chain).toBeNull();
  });

  it('is deterministic: the same record gives the same bytes, with no wall-clock field', async () => {
    const event = decision({}, { seq: 1 });
    const first = toOcsfLine(record(event));
    await new Promise((r) => setTimeout(r, 5));
    expect(toOcsfLine(record(structuredClone(event)))).toBe(first);
    expect(toCef(record(structuredClone(event)))).toBe(toCef(record(event)));
    expect(first).not.toContain('\n');
  });
});

describe('CEF feed', () => {
  it('writes one CEF:0 line with externalId = event id and a higher severity for denials and errors', () => {
    const event = decision();
    const line = toCef(record(event));
    expect(line.startsWith('CEF:0|gatehouse|gatehouse|1|TOOL.EGRESS_HOST_NOT_DECLARED|tool denied|7|')).toBe(true);
    expect(line).toContain(`externalId=${event.id}`);
    expect(line).toContain('cs2Label=policy cs2=default@3#deny-egress');
    expect(toCef(record(decision({ outcome: 'error' })))).toMatch(/\|8\|/);
    expect(toCef(record(decision({ outcome: 'allowed' })))).toMatch(/\|1\|/);
  });

  it('escapes pipes and backslashes in header fields and drops line breaks there', () => {
    expect(escapeCefHeader('a|b\\c\nd')).toBe('a\\|b\\\\c d');
    const line = toCef(record(decision({ code: 'X|Y\\Z' })));
    expect(line.split('|').slice(0, 5).join('|')).toBe('CEF:0|gatehouse|gatehouse|1|X\\');
    expect(line).toContain('|X\\|Y\\\\Z|');
  });

  it('escapes =, backslashes and newlines in extension values; reason text stays data', () => {
    expect(escapeCefValue('a=b\\c\r\nd|e')).toBe('a\\=b\\\\c\\r\\nd|e');
    const line = toCef(record(decision({ reason: 'blocked: key=value\nsrc=evil \\ end' })));
    expect(line).toContain('reason=blocked: key\\=value\\nsrc\\=evil \\\\ end');
    expect(line).not.toContain('\n');
    // An injected key cannot appear unescaped.
    expect(line).not.toMatch(/ src=evil/);
  });

  it('omits labels whose value is absent', () => {
    const line = toCef(record(decision({ toolId: undefined })));
    expect(line).not.toContain('cs5Label');
  });

  it('toLine tags lines with id, format and position', () => {
    const event = decision();
    expect(toLine(record(event, 1, '9'), 'cef')).toMatchObject({ eventId: event.id, format: 'cef', partition: 1, offset: '9', outcome: 'denied', boundary: 'tool' });
  });
});
