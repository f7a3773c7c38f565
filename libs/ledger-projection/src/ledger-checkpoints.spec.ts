import { describe, expect, it } from '@jest/globals';
import { TOPICS } from '@gatehouse/contracts';
import { CHECKPOINT_REFRESH_MS, checkpointRetentionNeedMs } from './ledger-checkpoints.js';

const DAY_MS = 24 * 60 * 60 * 1000;

describe('what the ledger topic must keep with checkpoints', () => {
  it('is two intervals or two refreshes of an unchanged partition, whichever is longer, and the catalog keeps it for the longest interval', () => {
    expect(CHECKPOINT_REFRESH_MS).toBe(DAY_MS);
    expect(checkpointRetentionNeedMs(60 * 60 * 1000)).toBe(2 * DAY_MS);
    expect(checkpointRetentionNeedMs(3 * DAY_MS)).toBe(6 * DAY_MS);
    // GATEHOUSE_LEDGER_CHECKPOINT_MS allows up to a week: the provisioned topic must not refuse it.
    expect(Number(TOPICS.ledger.configs['retention.ms'])).toBeGreaterThanOrEqual(checkpointRetentionNeedMs(7 * DAY_MS));
  });
});
