import { expect } from '@jest/globals';
import { type TopicId, topicName } from '@gatehouse/contracts';
import { type Kafka } from 'kafkajs';
import pg from 'pg';

// Fold services (approval, idempotency ledger, policy) start from the snapshot of their fold that
// their projection stores (`<schema>.fold_snapshots`), not from offset 0. What the fault specs
// need to put snapshots in play and to check where a restarted service started.

/** Makes a fold service snapshot its fold with (nearly) every projection commit, so a kill lands among snapshot writes. */
export const SNAPSHOT_OFTEN = { GATEHOUSE_FOLD_SNAPSHOT_INTERVAL_MS: '100' } as const;

/** The fields of a fold service's status (`FoldStatus`) about snapshots. */
export interface FoldStartStatus {
  readonly phase: string;
  readonly start: { readonly from: 'snapshot' | 'offset-0'; readonly records: number; readonly rejected?: string };
  readonly snapshots: { readonly written: number; readonly lastOffsets?: Record<string, string> };
}

/** A snapshot row as the projection stores it. */
export interface StoredSnapshot {
  readonly projection: string;
  readonly topic: string;
  readonly fold: string;
  readonly offsets: Record<string, string>;
  readonly bytes: number;
}

/** Per partition, the topic's end offset (the next to be written). */
export async function topicEnd(kafka: Kafka, topicId: TopicId, namespace: string): Promise<Record<string, string>> {
  const admin = kafka.admin();
  await admin.connect();
  try {
    const offsets = await admin.fetchTopicOffsets(topicName(topicId, namespace));
    return Object.fromEntries(offsets.map((o) => [String(o.partition), o.high]));
  } finally {
    await admin.disconnect();
  }
}

/** Records from `from` (per partition, next offset; a missing partition is 0) up to `to`. */
export function recordsBetween(from: Record<string, string>, to: Record<string, string>): number {
  return Object.entries(to).reduce((n, [partition, end]) => n + Number(BigInt(end) - BigInt(from[partition] ?? '0')), 0);
}

/** The snapshot rows of `schema`, read straight from PostgreSQL (one per projection and topic). */
export async function storedSnapshots(databaseUrl: string, schema: string): Promise<StoredSnapshot[]> {
  const client = new pg.Client({ connectionString: databaseUrl });
  await client.connect();
  try {
    const { rows } = await client.query<StoredSnapshot>(`SELECT projection, topic, fold, offsets, bytes FROM ${schema}.fold_snapshots ORDER BY projection, topic`);
    return rows;
  } finally {
    await client.end();
  }
}

/** The one snapshot row of `schema` (a fold service keeps one projection of one topic). */
export async function storedSnapshot(databaseUrl: string, schema: string): Promise<StoredSnapshot> {
  const rows = await storedSnapshots(databaseUrl, schema);
  expect(rows).toHaveLength(1);
  return rows[0] as StoredSnapshot;
}

/**
 * The restarted service loaded `stored` (the snapshot its projection held when the process died)
 * and read on from its offsets: it read at least what the log held past the snapshot before the
 * restart (`endBefore`), at most what it held once the service answered (`endAfter`), and fewer
 * records than the whole topic.
 */
export function expectStartedFrom(status: FoldStartStatus, stored: StoredSnapshot, endBefore: Record<string, string>, endAfter: Record<string, string>): void {
  expect(status.start.from).toBe('snapshot');
  expect(status.start.rejected).toBeUndefined();
  expect(recordsBetween({}, stored.offsets)).toBeGreaterThan(0);
  expect(status.start.records).toBeGreaterThanOrEqual(recordsBetween(stored.offsets, endBefore));
  expect(status.start.records).toBeLessThanOrEqual(recordsBetween(stored.offsets, endAfter));
  expect(status.start.records).toBeLessThan(recordsBetween({}, endAfter));
}

/** A reviewer's decision over REST: the HTTP status, or 0 when the connection broke (the service died under it). */
export async function postDecision(baseUrl: string, headers: Record<string, string>, approvalId: string, verdict: 'approve' | 'deny'): Promise<number> {
  try {
    const res = await fetch(`${baseUrl}/v1/approvals/${approvalId}/decision`, { method: 'POST', headers, body: JSON.stringify({ verdict }) });
    await res.body?.cancel();
    return res.status;
  } catch {
    return 0;
  }
}
