import { describe, expect, it } from '@jest/globals';
import { TOPICS } from '@gatehouse/contracts';
import { minInsyncReplicas, topicPartitions, topicPartitionsFromEnv } from './provision.js';

describe('partitions at provisioning', () => {
  it('gives the partitioned topics the catalog count, or the deployment\'s, and keeps one-partition topics at one', () => {
    expect(topicPartitions('ledger')).toBe(TOPICS.ledger.partitions);
    expect(TOPICS.ledger.partitions).toBe(12);
    expect(topicPartitions('ledger', 3)).toBe(3);
    expect(topicPartitions('audit', 24)).toBe(24);
    expect(topicPartitions('policies', 3)).toBe(1);
    expect(topicPartitions('deadLetter', 6)).toBe(1);
  });

  it('reads GATEHOUSE_TOPIC_PARTITIONS as a whole number from 1 to 1000, and refuses anything else with a typed error', () => {
    expect(topicPartitionsFromEnv({})).toBeUndefined();
    expect(topicPartitionsFromEnv({ GATEHOUSE_TOPIC_PARTITIONS: '' })).toBeUndefined();
    expect(topicPartitionsFromEnv({ GATEHOUSE_TOPIC_PARTITIONS: '3' })).toBe(3);
    for (const bad of ['0', '1001', '-3', '3.5', '3e1', ' 3', 'twelve']) {
      expect(() => topicPartitionsFromEnv({ GATEHOUSE_TOPIC_PARTITIONS: bad })).toThrow(expect.objectContaining({ code: 'KAFKA.CONFIG_INVALID' }));
    }
  });

  it('asks two copies of an acknowledged write from three replicas on, one below', () => {
    expect([1, 2, 3, 5].map(minInsyncReplicas)).toEqual([1, 1, 2, 2]);
  });
});
