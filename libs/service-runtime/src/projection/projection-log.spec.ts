import { describe, expect, it } from '@jest/globals';
import { type StoredPosition } from '../database.js';
import { judgeLog, type LiveLog, type StoredLog } from './projection-log.js';

const identity = { clusterId: 'cluster-a', generation: '7d0c3a5e-0000-4000-8000-000000000001' };
const T = 1_750_000_000_000;

/** A stored projection: partition 0 applied up to 10, its last record at offset 9 appended at T. */
function stored(overrides: Partial<StoredLog> = {}, positions: StoredPosition[] = [{ partition: 0, nextOffset: 10n, anchor: { offset: 9n, timeMs: T } }]): StoredLog {
  return { identity, otherTopic: false, positions, ...overrides };
}

/** The same log as the broker has it: offset 9 is the first record at T, offset 10 the first after. */
function live(overrides: Partial<LiveLog> = {}): LiveLog {
  return {
    clusterId: 'cluster-a',
    partitions: new Map([[0, { low: 0n, high: 12n }]]),
    lookups: new Map([[0, { atTime: 9n, afterTime: 10n }]]),
    ...overrides,
  };
}

describe('judgeLog', () => {
  it('finds the log the rows came from, grown since', () => {
    expect(judgeLog(stored(), live())).toEqual({ kind: 'same', generation: identity.generation });
  });

  it('accepts records appended in the same millisecond as the anchor, before or after it', () => {
    expect(judgeLog(stored(), live({ lookups: new Map([[0, { atTime: 7n, afterTime: 11n }]]) })).kind).toBe('same');
  });

  it('takes an empty projection with nothing stored as new', () => {
    expect(judgeLog({ otherTopic: false, positions: [] }, live())).toEqual({ kind: 'new' });
    expect(judgeLog({ otherTopic: false, positions: [{ partition: 0, nextOffset: 0n }] }, live())).toEqual({ kind: 'new' });
  });

  it('refuses a broker of another cluster', () => {
    expect(judgeLog(stored(), live({ clusterId: 'cluster-b' }))).toEqual({ kind: 'changed', change: 'cluster-changed' });
  });

  it('refuses a topic recreated empty: it ends before the stored offset', () => {
    expect(judgeLog(stored(), live({ partitions: new Map([[0, { low: 0n, high: 0n }]]), lookups: new Map() }))).toEqual({ kind: 'changed', change: 'log-shorter' });
  });

  it('refuses a topic recreated and refilled past the stored offset: its records are of a later time', () => {
    // Every record of the new log was appended after T: the first at or after T is offset 0.
    expect(judgeLog(stored(), live({ lookups: new Map([[0, { atTime: 0n, afterTime: 0n }]]) }))).toEqual({ kind: 'changed', change: 'anchor-differs' });
  });

  it('refuses a partition the topic no longer has', () => {
    expect(judgeLog(stored(), live({ partitions: new Map([[1, { low: 0n, high: 20n }]]) }))).toEqual({ kind: 'changed', change: 'partition-missing' });
  });

  it('refuses rows of another topic in an exclusive projection', () => {
    expect(judgeLog(stored({ otherTopic: true }), live())).toEqual({ kind: 'changed', change: 'topic-changed' });
  });

  it('accepts an anchor that retention expired in place: a recreated log starts at 0, not past it', () => {
    expect(judgeLog(stored(), live({ partitions: new Map([[0, { low: 10n, high: 10n }]]), lookups: new Map() })).kind).toBe('same');
  });

  it('refuses offsets stored before identities were kept, unless anchors show the log is theirs', () => {
    expect(judgeLog(stored({ identity: undefined }, [{ partition: 0, nextOffset: 10n }]), live())).toEqual({ kind: 'changed', change: 'unverified' });
    expect(judgeLog(stored({ identity: undefined }), live())).toEqual({ kind: 'adopt' });
    expect(judgeLog(stored({ identity: undefined }), live({ lookups: new Map([[0, { atTime: 0n, afterTime: 0n }]]) }))).toEqual({ kind: 'changed', change: 'anchor-differs' });
  });

  it('checks only the end of a bound partition that never had an anchor (it held records without a log time only)', () => {
    const positions = [{ partition: 0, nextOffset: 3n }];
    expect(judgeLog(stored({}, positions), live()).kind).toBe('same');
    expect(judgeLog(stored({}, positions), live({ partitions: new Map([[0, { low: 0n, high: 2n }]]) }))).toEqual({ kind: 'changed', change: 'log-shorter' });
  });
});
