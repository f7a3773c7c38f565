import { describe, expect, it } from '@jest/globals';
import { createEvent } from './codec.js';
import { DecisionRecordedV1 } from './events/audit.js';
import { eventDigest, verifyAuditChain } from './chain.js';

function stream(producer: string, n: number) {
  const out: Record<string, unknown>[] = [];
  let prev: string | null = null;
  for (let seq = 1; seq <= n; seq += 1) {
    const event = {
      ...createEvent(DecisionRecordedV1, { source: 'guard:test', tenant: 'acme', subject: 'run-1' }, {
        decisionId: '6f1f6a53-3c56-4a8e-9a77-3a8f2d36b0a1',
        boundary: 'tool',
        outcome: 'allowed',
        code: `C${seq}`,
        reason: 'ok',
      }),
      chain: { producer, seq, prevHash: prev },
    };
    prev = eventDigest(event);
    out.push(event);
  }
  return out;
}
const read = (events: Record<string, unknown>[]) => events.map((event, i) => ({ event, position: `line:${i + 1}` }));

describe('verifyAuditChain', () => {
  it('accepts an intact stream', () => {
    const report = verifyAuditChain(read(stream('p1', 5)));
    expect(report).toMatchObject({ ok: true, events: 5, producers: [{ producer: 'p1', events: 5, firstSeq: 1, lastSeq: 5 }] });
  });

  it('finds a dropped event as a gap', () => {
    const events = stream('p1', 5);
    events.splice(2, 1);
    expect(verifyAuditChain(read(events)).findings).toEqual([{ kind: 'gap', producer: 'p1', missingFrom: 3, missingTo: 3, position: 'line:3' }]);
  });

  it('finds an edited event as altered', () => {
    const events = stream('p1', 5);
    events[1] = { ...events[1], subject: 'run-forged' };
    expect(verifyAuditChain(read(events)).findings).toEqual([{ kind: 'altered', producer: 'p1', seq: 2, position: 'line:2' }]);
  });

  it('finds reordered and duplicated events, per producer', () => {
    const a = stream('p1', 4);
    const b = stream('p2', 2);
    const mixed = [a[0], b[0], a[2], a[1], b[1], a[3], a[3]] as Record<string, unknown>[];
    const findings = verifyAuditChain(read(mixed)).findings;
    expect(findings).toEqual(
      expect.arrayContaining([
        { kind: 'reordered', producer: 'p1', seq: 2, afterSeq: 3, position: 'line:4' },
        { kind: 'duplicate', producer: 'p1', seq: 4, id: String(a[3]?.['id']), position: 'line:7' },
      ]),
    );
    expect(findings).toHaveLength(2);
  });
});
