import { describe, expect, it } from '@jest/globals';
import { randomUUID } from 'node:crypto';
import { type AuditChainCheckpoint, checkCheckpoint, createEvent, type DecisionRecorded, DecisionRecordedV1, eventDigest, verifyAuditSources } from '@gatehouse/contracts';
import { TEST_KEYRING, TEST_KEYS } from '@gatehouse/contracts/testing';
import { AuditCheckpointer } from './audit-checkpoints.js';

function decision(seq?: number): DecisionRecorded {
  const event = createEvent(DecisionRecordedV1, { source: 'service:approval', tenant: 'acme', subject: 'run-1' }, { decisionId: randomUUID(), boundary: 'approval', outcome: 'denied', code: 'SECURITY.X', reason: 'static' });
  return seq === undefined ? event : { ...event, chain: { producer: 'p', seq, prevHash: null } };
}

function recorder(fail = () => false) {
  const appended: AuditChainCheckpoint[] = [];
  return {
    appended,
    append: async (checkpoint: AuditChainCheckpoint) => {
      if (fail()) throw new Error('broker down');
      appended.push(checkpoint);
    },
  };
}

const until = async (check: () => boolean, ms = 2_000) => {
  const deadline = Date.now() + ms;
  while (!check()) {
    if (Date.now() > deadline) throw new Error('condition not met in time');
    await new Promise((r) => setTimeout(r, 5));
  }
};

describe('AuditCheckpointer', () => {
  it('signs one checkpoint per `every` acknowledged records, over exactly their digests', async () => {
    const log = recorder();
    const checkpoints = new AuditCheckpointer({ key: TEST_KEYS.approval, source: 'service:approval', every: 3, intervalMs: 60_000, append: log.append });
    const records = [decision(), decision(), decision(), decision()];
    for (const r of records) checkpoints.covered(r);
    await until(() => log.appended.length === 1);
    expect(log.appended[0]?.payload.digests).toEqual(records.slice(0, 3).map((r) => eventDigest(r)));
    expect(checkpoints.uncovered).toBe(1);
    await checkpoints.close();
    expect(log.appended).toHaveLength(2);
    expect(log.appended[1]?.payload.digests).toEqual([eventDigest(records[3])]);
    expect(log.appended.every((c) => checkCheckpoint(c, TEST_KEYRING).trusted && c.source === 'service:approval' && c.tenant === '*')).toBe(true);
    expect(verifyAuditSources([...records, ...log.appended].map((event, i) => ({ event, position: String(i) })), TEST_KEYRING)).toMatchObject({ verified: 4, forbidden: 0, unverified: 0 });
  });

  it('writes a checkpoint `intervalMs` after the first uncovered record, and names the last chain seq', async () => {
    const log = recorder();
    const checkpoints = new AuditCheckpointer({ key: TEST_KEYS.approval, source: 'service:approval', producer: 'p', every: 100, intervalMs: 30, append: log.append });
    checkpoints.covered(decision(1));
    checkpoints.covered(decision(2));
    await until(() => log.appended.length === 1);
    expect(log.appended[0]?.payload).toMatchObject({ producer: 'p', lastSeq: 2 });
    expect(log.appended[0]?.subject).toBe('p');
    expect(checkpoints.checkpoints).toBe(1);
    await checkpoints.close();
    expect(log.appended).toHaveLength(1); // nothing left to cover
  });

  it('gives the records of a checkpoint it could not append back to the next one', async () => {
    let down = true;
    const errors: unknown[] = [];
    const log = recorder(() => down);
    const checkpoints = new AuditCheckpointer({ key: TEST_KEYS.approval, source: 'service:approval', every: 2, intervalMs: 20, append: log.append, onError: (e) => void errors.push(e) });
    const records = [decision(), decision()];
    for (const r of records) checkpoints.covered(r);
    await until(() => errors.length >= 1);
    await expect(checkpoints.flush()).rejects.toThrow('broker down');
    expect(checkpoints.uncovered).toBe(2);
    down = false;
    await checkpoints.close();
    expect(log.appended.map((c) => c.payload.digests)).toEqual([records.map((r) => eventDigest(r))]);
    checkpoints.covered(decision());
    expect(checkpoints.uncovered).toBe(0); // closed: nothing more is covered
  });

  it('refuses unknown options and out-of-range counts', () => {
    const append = async () => undefined;
    expect(() => new AuditCheckpointer({ key: TEST_KEYS.approval, source: 's', append, everyMs: 5 } as never)).toThrow('unknown auditCheckpointer option "everyMs"');
    expect(() => new AuditCheckpointer({ key: TEST_KEYS.approval, source: 's', append, every: 1_001 })).toThrow('every must be an integer from 1 to 1000');
    expect(() => new AuditCheckpointer({ key: undefined as never, source: 's', append })).toThrow('key must be');
    expect(() => new AuditCheckpointer({ key: TEST_KEYS.approval, source: '', append })).toThrow('source must be');
  });
});
