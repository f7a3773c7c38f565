import { type AuditChainCheckpoint, type CheckpointCheck, checkCheckpoint, judgeAuditRecord, type Keyring } from '@gatehouse/contracts';
import { jsonbParam } from '@gatehouse/service-runtime';
import { type EntityManager } from 'typeorm';
import { type RecordVerification } from '../feeds/export-line.js';

/**
 * The projection's side of per-source verification (`audit-sources.ts` in contracts). A decision
 * and the checkpoint that lists its digest may be read in either order (they are usually on
 * different partitions), so both are kept and each write re-judges the decisions whose digests
 * it touched: the verdict is the same whichever came first. A checkpoint's signature is checked
 * once, when it is projected; the key it names is looked up in the keyring at each judgement.
 */

/** A checkpoint row, and the digests it lists. */
export interface CheckpointRow {
  readonly event_id: string;
  readonly topic: string;
  readonly partition: number;
  readonly offset: string;
  readonly log_time: string;
  readonly producer: string;
  readonly source: string;
  readonly trusted: boolean;
  readonly untrusted_reason: string | null;
  readonly key_id: string | null;
  readonly digests: readonly string[];
}

/** What a read checkpoint becomes: its signature checked against `keyring` (none configured: no key is trusted). */
export function checkpointRow(record: { event: AuditChainCheckpoint; topic: string; partition: number; offset: string; logTime: Date }, keyring: Keyring | undefined): CheckpointRow {
  const { event } = record;
  const check: CheckpointCheck = keyring ? checkCheckpoint(event, keyring) : { trusted: false, reason: 'unknown-key' };
  const keyId = check.trusted ? check.key.keyId : (check.keyId ?? null);
  return {
    event_id: event.id,
    topic: record.topic,
    partition: record.partition,
    offset: record.offset,
    log_time: record.logTime.toISOString(),
    producer: event.payload.producer,
    source: event.source,
    trusted: check.trusted,
    untrusted_reason: check.trusted ? null : check.reason,
    key_id: keyId,
    digests: event.payload.digests,
  };
}

/** Stores checkpoints (idempotent by event id) with the digests they list. */
export async function storeCheckpoints(manager: EntityManager, s: string, rows: readonly CheckpointRow[]): Promise<void> {
  if (rows.length === 0) return;
  await manager.query(
    `INSERT INTO ${s}.audit_checkpoints (event_id, topic, partition, "offset", log_time, producer, source, trusted, untrusted_reason, key_id)
     SELECT c.event_id, c.topic, c.partition, c."offset", c.log_time, c.producer, c.source, c.trusted, c.untrusted_reason, c.key_id
       FROM jsonb_to_recordset($1::jsonb) AS c(event_id uuid, topic text, partition integer, "offset" bigint, log_time timestamptz, producer text, source text, trusted boolean, untrusted_reason text, key_id text)
     ON CONFLICT DO NOTHING`,
    [jsonbParam(rows.map(({ digests: _digests, ...row }) => row))],
  );
  const digests = rows.flatMap((row) => row.digests.map((digest) => ({ topic: row.topic, digest, checkpoint_id: row.event_id })));
  await manager.query(
    `INSERT INTO ${s}.audit_checkpoint_digests (topic, digest, checkpoint_id)
     SELECT d.topic, d.digest, d.checkpoint_id FROM jsonb_to_recordset($1::jsonb) AS d(topic text, digest text, checkpoint_id uuid)
     ON CONFLICT DO NOTHING`,
    [jsonbParam(digests)],
  );
}

/** A verdict that changed to forbidden: what the service logs as SECURITY.FORBIDDEN_AUDIT_SOURCE. */
export interface ForbiddenVerdict {
  readonly eventId: string;
  readonly reason: string;
  readonly partition: number;
  readonly offset: string;
}

interface ChangedRow {
  event_id: string;
  verification: string;
  verification_reason: string | null;
  partition: number;
  offset: string;
}

interface CoverRow {
  digest: string;
  event_id: string;
  source: string;
  trusted: boolean;
  untrusted_reason: string | null;
  key_id: string | null;
}

function coverCheck(row: CoverRow, keyring: Keyring | undefined): CheckpointCheck {
  const key = row.trusted && row.key_id !== null ? keyring?.keys.get(row.key_id) : undefined;
  if (key) return { trusted: true, key };
  // A key retired since the checkpoint was projected no longer vouches for anything.
  const reason = row.trusted ? 'unknown-key' : ((row.untrusted_reason ?? 'unsigned') as Extract<CheckpointCheck, { trusted: false }>['reason']);
  return { trusted: false, reason, ...(row.key_id !== null && { keyId: row.key_id }) };
}

/**
 * Judges again every decision of `topic` whose digest is in `digests`, from every checkpoint
 * stored for those digests, and writes the verdicts that changed. Returns the ones that became
 * forbidden.
 */
export async function judgeDigests(manager: EntityManager, s: string, topic: string, digests: readonly string[], keyring: Keyring | undefined): Promise<ForbiddenVerdict[]> {
  if (digests.length === 0) return [];
  const unique = [...new Set(digests)];
  const decisions = (await manager.query(
    `SELECT event_id, source, tenant, digest FROM ${s}.decisions WHERE topic = $1 AND digest = ANY($2::text[])`,
    [topic, unique],
  )) as { event_id: string; source: string; tenant: string; digest: string }[];
  if (decisions.length === 0) return [];
  const covers = (await manager.query(
    `SELECT d.digest, c.event_id, c.source, c.trusted, c.untrusted_reason, c.key_id
       FROM ${s}.audit_checkpoint_digests d JOIN ${s}.audit_checkpoints c ON c.event_id = d.checkpoint_id
      WHERE d.topic = $1 AND d.digest = ANY($2::text[])`,
    [topic, unique],
  )) as CoverRow[];
  const byDigest = new Map<string, CoverRow[]>();
  for (const row of covers) byDigest.set(row.digest, [...(byDigest.get(row.digest) ?? []), row]);
  const verdicts = decisions.map((d) => {
    const verdict = judgeAuditRecord(d, (byDigest.get(d.digest) ?? []).map((row) => ({ checkpointId: row.event_id, source: row.source, check: coverCheck(row, keyring) })));
    return {
      event_id: d.event_id,
      verification: verdict.status,
      reason: verdict.status === 'forbidden' ? verdict.reason : null,
      key_id: verdict.status === 'unverified' ? null : (verdict.keyId ?? null),
      checkpoint: verdict.status === 'unverified' ? null : verdict.checkpointId,
    };
  });
  // TypeORM answers an UPDATE with [rows, affected].
  const [changed] = (await manager.query(
    `UPDATE ${s}.decisions AS d
        SET verification = v.verification, verification_reason = v.reason, verified_by = v.key_id, verification_checkpoint = v.checkpoint
       FROM jsonb_to_recordset($1::jsonb) AS v(event_id uuid, verification text, reason text, key_id text, checkpoint uuid)
      WHERE d.event_id = v.event_id
        AND (d.verification, d.verification_reason, d.verified_by, d.verification_checkpoint) IS DISTINCT FROM (v.verification, v.reason, v.key_id, v.checkpoint)
      RETURNING d.event_id, d.verification, d.verification_reason, d.partition, d."offset"::text AS "offset"`,
    [jsonbParam(verdicts)],
  )) as [ChangedRow[], number];
  return changed.filter((r) => r.verification === 'forbidden').map((r) => ({ eventId: r.event_id, reason: r.verification_reason ?? 'forbidden', partition: r.partition, offset: r.offset }));
}

/** The verdicts of `eventIds` of `topic` as the projection holds them now (absent: not projected yet). */
export async function verdictsOf(manager: EntityManager, s: string, topic: string, eventIds: readonly string[]): Promise<Map<string, RecordVerification>> {
  if (eventIds.length === 0) return new Map();
  const rows = (await manager.query(
    `SELECT event_id, verification, verification_reason, verified_by, verification_checkpoint FROM ${s}.decisions WHERE topic = $1 AND event_id = ANY($2::uuid[])`,
    [topic, [...eventIds]],
  )) as { event_id: string; verification: RecordVerification['status']; verification_reason: string | null; verified_by: string | null; verification_checkpoint: string | null }[];
  return new Map(rows.map((r) => [r.event_id, { status: r.verification, reason: r.verification_reason, keyId: r.verified_by, checkpoint: r.verification_checkpoint }]));
}
