import { describe, expect, it } from '@jest/globals';
import { retentionProblem } from './topic-retention.js';

const DAY = 24 * 3_600_000;
const kept = (overrides: Partial<{ cleanupPolicy: string; retentionMs: number; retentionBytes: number }> = {}) => ({ cleanupPolicy: 'delete', retentionMs: 60 * DAY, retentionBytes: -1, ...overrides });
const problem = (need: Parameters<typeof retentionProblem>[1], found: ReturnType<typeof kept>) => retentionProblem('t', need, found)?.code;

describe('retentionProblem', () => {
  it('accepts a time limit at or above the need, and no limit at all', () => {
    expect(problem({ atLeastMs: 51 * DAY }, kept())).toBeUndefined();
    expect(problem({ atLeastMs: 60 * DAY }, kept())).toBeUndefined();
    expect(problem({ atLeastMs: 51 * DAY }, kept({ retentionMs: -1 }))).toBeUndefined();
    expect(problem('forever', kept({ retentionMs: -1 }))).toBeUndefined();
  });

  it('refuses a shorter time limit, any time limit where every record is needed, a size limit and compaction', () => {
    expect(problem({ atLeastMs: 60 * DAY + 1 }, kept())).toBe('KAFKA.LOG_RETENTION_TOO_SHORT');
    expect(problem('forever', kept({ retentionMs: 10_000 * DAY }))).toBe('KAFKA.LOG_RETENTION_TOO_SHORT');
    expect(problem({ atLeastMs: DAY }, kept({ retentionBytes: 0 }))).toBe('KAFKA.LOG_RETENTION_TOO_SHORT');
    expect(problem({ atLeastMs: DAY }, kept({ retentionBytes: 1 << 30, retentionMs: -1 }))).toBe('KAFKA.LOG_RETENTION_TOO_SHORT');
    expect(problem({ atLeastMs: DAY }, kept({ cleanupPolicy: 'compact' }))).toBe('KAFKA.LOG_RETENTION_TOO_SHORT');
    expect(problem('forever', kept({ cleanupPolicy: 'delete, compact', retentionMs: -1 }))).toBe('KAFKA.LOG_RETENTION_TOO_SHORT');
  });

  it('names the settings and the need, and nothing else', () => {
    const error = retentionProblem('ns.gatehouse.approvals.v1', { atLeastMs: 51 * DAY }, kept({ retentionMs: 7 * DAY }));
    expect(error?.details).toEqual({ topic: 'ns.gatehouse.approvals.v1', cleanupPolicy: 'delete', retentionMs: 7 * DAY, retentionBytes: -1, requiredRetentionMs: 51 * DAY });
    expect(error?.category).toBe('validation');
  });
});
