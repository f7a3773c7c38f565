import { describe, expect, it } from '@jest/globals';
import { decision, record } from '../testing/decisions.js';
import { escapeCefHeader, escapeCefValue, toCef } from './cef.js';
import { exportLines, FORBIDDEN_AUDIT_SOURCE, securityRecord, toLine } from './map-record.js';
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

describe('source verification in the feeds', () => {
  const forbidden = { status: 'forbidden', reason: 'forbidden-source', keyId: 'agent-globex', checkpoint: '9b2f3c1e-0000-4000-8000-000000000001' } as const;
  const verified = { status: 'verified', reason: null, keyId: 'approval-1', checkpoint: '9b2f3c1e-0000-4000-8000-000000000002' } as const;

  it('says in OCSF and CEF whether the record’s source vouched for it (null or absent when not judged)', () => {
    const event = decision();
    expect(toOcsf({ ...record(event), verification: verified })).toMatchObject({ unmapped: { verification: { status: 'verified', reason: null, key_id: 'approval-1', checkpoint_uid: verified.checkpoint } } });
    expect(JSON.parse(toOcsfLine(record(event))).unmapped.verification).toBeNull();
    const cef = toCef({ ...record(event), verification: forbidden });
    expect(cef).toContain('gatehouseVerification=forbidden gatehouseVerificationReason=forbidden-source');
    expect(toCef({ ...record(event), verification: verified })).toMatch(/gatehouseVerification=verified$/);
    expect(toCef(record(event))).not.toContain('gatehouseVerification');
  });

  it('follows a forbidden record with audit-export’s own SECURITY.FORBIDDEN_AUDIT_SOURCE denial, the same bytes on every export', () => {
    const event = decision({ outcome: 'allowed', code: 'APPROVAL.GRANTED', boundary: 'approval' }, { tenant: 'acme', subject: 'run-9' });
    const lines = exportLines({ ...record(event, 1, '12'), verification: forbidden }, 'ocsf');
    expect(lines).toHaveLength(2);
    expect(lines[0]?.eventId).toBe(event.id);
    const security = JSON.parse(lines[1]!.text) as Record<string, unknown>;
    expect(security).toMatchObject({
      status_code: FORBIDDEN_AUDIT_SOURCE,
      disposition: 'Blocked',
      metadata: { tenant_uid: 'acme' },
      unmapped: { gatehouse: { source: 'service:audit-export', subject: 'run-9', causation_id: event.id }, kafka: { partition: 1, offset: '12' } },
    });
    expect(security['status_detail']).toContain('forbidden-source');
    expect(exportLines({ ...record(structuredClone(event), 1, '12'), verification: forbidden }, 'ocsf').map((l) => l.text)).toEqual(lines.map((l) => l.text));
    expect(exportLines({ ...record(event), verification: forbidden }, 'cef')[1]?.text).toContain(`|${FORBIDDEN_AUDIT_SOURCE}|approval denied|7|`);
    expect(securityRecord({ ...record(event), verification: verified })).toBeUndefined();
    expect(exportLines({ ...record(event), verification: { status: 'unverified', reason: null, keyId: null, checkpoint: null } }, 'ocsf')).toHaveLength(1);
  });
});
