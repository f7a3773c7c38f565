import { describe, expect, it } from '@jest/globals';
import { randomUUID } from 'node:crypto';
import { auditCheckpoint, checkCheckpoint, judgeAuditRecord, verifyAuditSources } from './audit-sources.js';
import { eventDigest, verifyAuditChain } from './chain.js';
import { createEvent, decodeEvent, encodeEvent } from './codec.js';
import { type DecisionRecorded, DecisionRecordedV1 } from './events/audit.js';
import { signEvent } from './signing.js';
import { testAgentKey, testKeyring, testSigningKey } from './testing/index.js';

const approvalKey = testSigningKey('approval');
const policyKey = testSigningKey('policy');
const acmeAgent = testAgentKey('agent:support-bot', ['acme']);
const globexAgent = testAgentKey('agent:globex-bot', ['globex']);
const untrustedAgent = testAgentKey('agent:nobody', ['acme']);
const keyring = testKeyring(approvalKey, policyKey, acmeAgent, globexAgent);

function decision(source: string, tenant: string, code = 'TOOL.ALLOWED'): DecisionRecorded {
  return createEvent(DecisionRecordedV1, { source, tenant, subject: 'run-1' }, { decisionId: randomUUID(), boundary: 'tool', outcome: 'allowed', code, reason: 'static' });
}

const read = (events: readonly unknown[]) => events.map((event, i) => ({ event, position: `line:${i + 1}` }));
const digests = (events: readonly DecisionRecorded[]) => events.map((e) => eventDigest(e));

describe('audit checkpoints', () => {
  it('verifies a guard’s records under a checkpoint of its agent key, bound to their tenant', () => {
    const records = [decision('guard:support-bot', 'acme'), decision('guard:support-bot', 'acme')];
    const checkpoint = auditCheckpoint({ source: 'guard:support-bot', producer: 'guard:support-bot#1', digests: digests(records) }, acmeAgent);
    const report = verifyAuditSources(read([...records, checkpoint]), keyring);
    expect(report).toMatchObject({ ok: true, records: 2, verified: 2, unverified: 0, forbidden: 0, checkpoints: 1, missing: 0, findings: [] });
  });

  it('verifies a service’s records, of any tenant, under a checkpoint of its own signer’s key', () => {
    const records = [decision('service:approval', 'acme'), decision('service:approval', 'globex')];
    const checkpoint = auditCheckpoint({ source: 'service:approval', producer: 'service:approval#1', digests: digests(records) }, approvalKey);
    expect(verifyAuditSources(read([checkpoint, ...records]), keyring)).toMatchObject({ ok: true, verified: 2 });
  });

  it('survives the codec: a checkpoint read back from its bytes still verifies', () => {
    const record = decision('guard:support-bot', 'acme');
    const checkpoint = auditCheckpoint({ source: 'guard:support-bot', producer: 'p', digests: digests([record]), lastSeq: 1 }, acmeAgent);
    const back = decodeEvent('audit', encodeEvent('audit', checkpoint));
    expect(back.type).toBe('AuditChainCheckpoint');
    expect(checkCheckpoint(back, keyring)).toMatchObject({ trusted: true, key: { keyId: acmeAgent.keyId } });
    const record2 = decodeEvent('audit', encodeEvent('audit', record));
    expect(verifyAuditSources(read([record2, back]), keyring).verified).toBe(1);
  });

  it('forbids an agent key vouching for service:approval, and reports its checkpoint', () => {
    const forged = decision('service:approval', 'acme', 'APPROVAL.GRANTED');
    const checkpoint = auditCheckpoint({ source: 'service:approval', producer: 'service:approval#fake', digests: digests([forged]) }, globexAgent);
    const report = verifyAuditSources(read([forged, checkpoint]), keyring);
    expect(report).toMatchObject({ ok: false, verified: 0, forbidden: 1 });
    expect(report.findings).toEqual(
      expect.arrayContaining([
        expect.objectContaining({ kind: 'forbidden-checkpoint', id: checkpoint.id, source: 'service:approval', keyId: globexAgent.keyId }),
        expect.objectContaining({ kind: 'forbidden', id: forged.id, source: 'service:approval', tenant: 'acme', reason: 'forbidden-source', keyId: globexAgent.keyId }),
      ]),
    );
  });

  it('forbids a guard record in acme under a checkpoint of a key bound to globex only', () => {
    const forged = decision('guard:support-bot', 'acme');
    const checkpoint = auditCheckpoint({ source: 'guard:support-bot', producer: 'p', digests: digests([forged]) }, globexAgent);
    const report = verifyAuditSources(read([forged, checkpoint]), keyring);
    expect(report.findings).toEqual([expect.objectContaining({ kind: 'forbidden', id: forged.id, reason: 'forbidden-tenant' })]);
  });

  it('lets no service key speak for another service or for an agent', () => {
    const policyRecord = decision('service:policy', 'acme');
    const guardRecord = decision('guard:support-bot', 'acme');
    const asPolicy = auditCheckpoint({ source: 'service:policy', producer: 'p1', digests: digests([policyRecord]) }, approvalKey);
    const asGuard = auditCheckpoint({ source: 'guard:support-bot', producer: 'p2', digests: digests([guardRecord]) }, approvalKey);
    const report = verifyAuditSources(read([policyRecord, guardRecord, asPolicy, asGuard]), keyring);
    expect(report.forbidden).toBe(2);
    expect(report.findings.filter((f) => f.kind === 'forbidden').map((f) => f.kind === 'forbidden' && f.reason)).toEqual(['forbidden-source', 'forbidden-source']);
  });

  it('forbids records under a checkpoint of a source other than theirs', () => {
    const other = decision('guard:other-bot', 'acme');
    const checkpoint = auditCheckpoint({ source: 'guard:support-bot', producer: 'p', digests: digests([other]) }, acmeAgent);
    expect(verifyAuditSources(read([other, checkpoint]), keyring).findings).toEqual([expect.objectContaining({ kind: 'forbidden', reason: 'forbidden-source' })]);
  });

  it('forbids records under a forged checkpoint (altered signature, unsigned), and counts one of an unknown key as proving nothing', () => {
    const records = [decision('service:approval', 'acme'), decision('service:approval', 'acme'), decision('service:approval', 'acme')];
    const unknown = auditCheckpoint({ source: 'service:approval', producer: 'p1', digests: digests([records[0]!]) }, untrustedAgent);
    const genuine = auditCheckpoint({ source: 'service:approval', producer: 'p2', digests: digests([records[1]!]) }, approvalKey);
    // The approval service's checkpoint, its digests swapped for another record's: the signature no longer matches.
    const altered = { ...genuine, payload: { ...genuine.payload, digests: digests([records[2]!]) } };
    const { signature: _dropped, ...unsigned } = auditCheckpoint({ source: 'service:approval', producer: 'p3', digests: digests([records[0]!]) }, approvalKey);
    const report = verifyAuditSources(read([...records.slice(0, 1), records[2], unknown, altered, unsigned]), keyring);
    expect(report.findings.filter((f) => f.kind === 'untrusted-checkpoint').map((f) => f.kind === 'untrusted-checkpoint' && f.reason).sort()).toEqual(['bad-signature', 'unsigned']);
    // records[0]: under the unknown key's and the unsigned checkpoint (forbidden); records[2]: under the altered one.
    expect(report).toMatchObject({ verified: 0, forbidden: 2, unknownKeyCheckpoints: 1 });
    // A key retired since, or one of the attacker's making: what only it vouched for is unverified, not forbidden.
    expect(verifyAuditSources(read([records[0], unknown]), keyring)).toMatchObject({ ok: true, unverified: 1, forbidden: 0, unknownKeyCheckpoints: 1, findings: [] });
    expect(report.findings.filter((f) => f.kind === 'forbidden').every((f) => f.kind === 'forbidden' && f.reason === 'untrusted-checkpoint')).toBe(true);
  });

  it('keeps an honest record verified when a forged checkpoint lists it too, in either order', () => {
    const honest = decision('guard:support-bot', 'acme');
    const mine = auditCheckpoint({ source: 'guard:support-bot', producer: 'p', digests: digests([honest]) }, acmeAgent);
    const theirs = auditCheckpoint({ source: 'guard:support-bot', producer: 'q', digests: digests([honest]) }, globexAgent);
    for (const order of [[honest, theirs, mine], [mine, honest, theirs], [theirs, mine, honest]]) {
      expect(verifyAuditSources(read(order), keyring)).toMatchObject({ verified: 1, forbidden: 0 });
    }
  });

  it('reads a log without checkpoints as unverified, grouped by source and tenant, with no finding', () => {
    const old = [decision('guard:a', 'acme'), decision('guard:a', 'acme'), decision('service:approval', 'globex')];
    const report = verifyAuditSources(read(old), keyring);
    expect(report).toMatchObject({ ok: true, records: 3, verified: 0, unverified: 3, forbidden: 0, findings: [] });
    expect(report.unverifiedSources).toEqual([
      { source: 'guard:a', tenant: 'acme', records: 2, first: 'line:1' },
      { source: 'service:approval', tenant: 'globex', records: 1, first: 'line:3' },
    ]);
  });

  it('no longer covers a record altered after its checkpoint, and counts what the checkpoint lists but the log lacks', () => {
    const records = [decision('guard:support-bot', 'acme'), decision('guard:support-bot', 'acme')];
    const checkpoint = auditCheckpoint({ source: 'guard:support-bot', producer: 'p', digests: digests(records) }, acmeAgent);
    const altered = { ...records[0]!, tenant: 'globex' };
    const report = verifyAuditSources(read([altered, checkpoint]), keyring);
    expect(report).toMatchObject({ verified: 0, unverified: 1, missing: 2 });
  });

  it('reports a checkpoint that fails its schema, and judges the same covers the same way every time', () => {
    const record = decision('guard:support-bot', 'acme');
    const checkpoint = auditCheckpoint({ source: 'guard:support-bot', producer: 'p', digests: digests([record]) }, acmeAgent);
    const malformed = { ...checkpoint, payload: { producer: 'p', digests: ['not-a-digest'] } };
    expect(verifyAuditSources(read([record, malformed]), keyring).findings).toEqual([{ kind: 'malformed-checkpoint', id: checkpoint.id, position: 'line:2' }]);
    const covers = [{ checkpointId: checkpoint.id, source: checkpoint.source, check: checkCheckpoint(checkpoint, keyring) }];
    expect(judgeAuditRecord(record, covers)).toEqual({ status: 'verified', keyId: acmeAgent.keyId, checkpointId: checkpoint.id });
    expect(judgeAuditRecord(record, [])).toEqual({ status: 'unverified' });
  });

  it('leaves checkpoints out of the hash chain: a chained stream with its checkpoint is intact', () => {
    let prevHash: string | null = null;
    const chained: DecisionRecorded[] = [];
    for (let seq = 1; seq <= 3; seq += 1) {
      const event: DecisionRecorded = { ...decision('guard:support-bot', 'acme'), chain: { producer: 'p', seq, prevHash } };
      prevHash = eventDigest(event);
      chained.push(event);
    }
    const checkpoint = auditCheckpoint({ source: 'guard:support-bot', producer: 'p', digests: digests(chained), lastSeq: 3 }, acmeAgent);
    expect(verifyAuditChain(read([...chained, checkpoint]))).toMatchObject({ ok: true, events: 3, unchained: 0 });
    expect(signEvent(checkpoint, acmeAgent).signature).toEqual(checkpoint.signature);
  });
});
