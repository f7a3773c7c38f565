import { GatehouseError } from '@gatehouse/contracts';
import { type Kafka } from 'kafkajs';
import { ConfigResourceTypes } from './kafkajs.js';

/**
 * What a fold needs its topic to keep: every record for at least `atLeastMs` (by log time), or
 * every record for ever. A fold's correctness can depend on it: the approval fold reaches the
 * service's state from what the topic still holds only under `approvalLogRetentionMs`, and the
 * ledger's open keys have no end in time.
 */
export type RetentionNeed = { readonly atLeastMs: number } | 'forever';

/** The topic settings that decide what the broker deletes, as the broker reports them. */
export interface TopicRetention {
  readonly cleanupPolicy: string;
  /** -1: no time limit. */
  readonly retentionMs: number;
  /** -1: no size limit. */
  readonly retentionBytes: number;
}

function tooShort(topic: string, need: RetentionNeed, found: TopicRetention, why: string): GatehouseError {
  const required = need === 'forever' ? -1 : need.atLeastMs;
  return new GatehouseError('KAFKA.LOG_RETENTION_TOO_SHORT', `the topic can delete records this service still needs (${why}): run provisioning, or raise the topic's retention`, {
    category: 'validation',
    details: { topic, cleanupPolicy: found.cleanupPolicy, retentionMs: found.retentionMs, retentionBytes: found.retentionBytes, requiredRetentionMs: required },
  });
}

/** The problem with `found` for `need`, if any (pure: the start-up check below, and its tests). */
export function retentionProblem(topic: string, need: RetentionNeed, found: TopicRetention): GatehouseError | undefined {
  const policies = found.cleanupPolicy.split(',').map((p) => p.trim());
  // Compaction keeps one record per key: a lifecycle of several records loses all but its last.
  if (policies.includes('compact')) return tooShort(topic, need, found, 'compaction');
  // A size limit deletes the oldest records whatever their age.
  if (found.retentionBytes >= 0) return tooShort(topic, need, found, 'a size limit');
  if (found.retentionMs < 0) return undefined;
  if (need === 'forever' || found.retentionMs < need.atLeastMs) return tooShort(topic, need, found, 'a time limit');
  return undefined;
}

function integerSetting(entries: ReadonlyMap<string, string>, name: string, topic: string): number {
  const raw = entries.get(name);
  const value = raw === undefined ? Number.NaN : Number(raw);
  if (!Number.isSafeInteger(value)) {
    throw new GatehouseError('KAFKA.LOG_RETENTION_UNKNOWN', `the broker did not report the topic's ${name}`, { category: 'unavailable', details: { topic, setting: name } });
  }
  return value;
}

/** Reads the retention settings of `topic` (the principal needs DescribeConfigs on it: granted to the folds that check, `TopicGrant.configReaders`). */
export async function describeTopicRetention(kafka: Kafka, topic: string): Promise<TopicRetention> {
  const admin = kafka.admin();
  let entries: Map<string, string>;
  try {
    await admin.connect();
    const described = await admin.describeConfigs({ includeSynonyms: false, resources: [{ type: ConfigResourceTypes.TOPIC, name: topic }] });
    entries = new Map((described.resources[0]?.configEntries ?? []).map((e) => [e.configName, e.configValue]));
  } catch (cause) {
    throw new GatehouseError('KAFKA.LOG_RETENTION_UNKNOWN', "could not read the topic's retention (the service's principal needs DescribeConfigs on it: run provisioning)", {
      category: 'unavailable',
      details: { topic },
      cause,
    });
  } finally {
    await admin.disconnect().catch(() => undefined);
  }
  return {
    cleanupPolicy: entries.get('cleanup.policy') ?? '',
    retentionMs: integerSetting(entries, 'retention.ms', topic),
    retentionBytes: integerSetting(entries, 'retention.bytes', topic),
  };
}

/**
 * Refuses to go on when the broker could delete records of `topic` the fold still needs: a fold
 * started on such a log could grant, or forget, what the full log would not. Fails closed: an
 * unreadable setting refuses too.
 */
export async function assertTopicRetention(kafka: Kafka, topic: string, need: RetentionNeed): Promise<TopicRetention> {
  const found = await describeTopicRetention(kafka, topic);
  const problem = retentionProblem(topic, need, found);
  if (problem) throw problem;
  return found;
}
