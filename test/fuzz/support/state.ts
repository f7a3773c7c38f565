import { expect } from '@jest/globals';
import { isDecisionRecorded, type TopicId, topicName } from '@gatehouse/contracts';
import { replayTopic } from '@gatehouse/kafka';
import { waitFor } from '@gatehouse/kafka/testing';
import { type Admin, type Kafka } from 'kafkajs';
import pg from 'pg';
import { getJson } from './kafka-fuzz.js';

// "No state changed" as the fuzz checks it: the end offsets of the topics a service writes (an
// append is a change even when every fold ignores it), and a digest of every row of every table
// in the service's PostgreSQL schema (a rewrite of a row with equal content still moves its
// updated_at, so the digest catches it).

/** Per topic, the high watermark of each partition, read through one admin connection per spec (a SCRAM handshake per read would cost more than the read). */
export class TopicEnds {
  private admin: Admin | undefined;

  constructor(
    private readonly kafka: Kafka,
    private readonly namespace: string,
  ) {}

  async of(topics: readonly TopicId[]): Promise<Record<string, string[]>> {
    if (!this.admin) {
      const admin = this.kafka.admin();
      await admin.connect();
      this.admin = admin;
    }
    const ends: Record<string, string[]> = {};
    for (const id of topics) {
      const offsets = await this.admin.fetchTopicOffsets(topicName(id, this.namespace));
      ends[id] = offsets.sort((a, b) => a.partition - b.partition).map((o) => o.high);
    }
    return ends;
  }

  /**
   * Resolves once `topics` took no record for `quietMs`: what an earlier step set off (a signed
   * audit checkpoint lands up to a second after the records it vouches for) is in before a window
   * is measured from here.
   */
  async quiet(topics: readonly TopicId[], quietMs: number, timeoutMs = 30_000): Promise<void> {
    const deadline = Date.now() + timeoutMs;
    let last = JSON.stringify(await this.of(topics));
    for (;;) {
      await new Promise((r) => setTimeout(r, quietMs));
      const now = JSON.stringify(await this.of(topics));
      if (now === last) return;
      if (Date.now() > deadline) throw new Error(`topics ${topics.join(', ')} did not settle`);
      last = now;
    }
  }

  async close(): Promise<void> {
    await this.admin?.disconnect();
    this.admin = undefined;
  }
}

/** Records appended to each topic between two `TopicEnds.of` snapshots. */
export function appended(before: Record<string, string[]>, after: Record<string, string[]>): Record<string, number> {
  const out: Record<string, number> = {};
  for (const [topic, ends] of Object.entries(after)) {
    out[topic] = ends.reduce((sum, end, p) => sum + Number(BigInt(end) - BigInt(before[topic]?.[p] ?? '0')), 0);
  }
  return out;
}

/** A client of the spec's throwaway database (the services' projections live in it). */
export class Database {
  private readonly pool: pg.Pool;

  constructor(url: string) {
    this.pool = new pg.Pool({ connectionString: url, max: 2 });
  }

  async query<R extends pg.QueryResultRow>(sql: string, params: unknown[] = []): Promise<R[]> {
    return (await this.pool.query<R>(sql, params)).rows;
  }

  /** Per table of `schema`: its row count and an md5 over every row's text. */
  async digest(schema: string): Promise<Record<string, { rows: number; md5: string }>> {
    const tables = await this.query<{ table_name: string }>(`SELECT table_name FROM information_schema.tables WHERE table_schema = $1 ORDER BY table_name`, [schema]);
    const out: Record<string, { rows: number; md5: string }> = {};
    for (const { table_name: table } of tables) {
      const [row] = await this.query<{ rows: string; md5: string }>(
        `SELECT count(*) AS rows, md5(coalesce(string_agg(t::text, '|' ORDER BY t::text), '')) AS md5 FROM ${ident(schema)}.${ident(table)} t`,
      );
      out[table] = { rows: Number(row?.rows ?? 0), md5: row?.md5 ?? '' };
    }
    return out;
  }

  /** Waits until `table` holds at least `rows` rows (projections commit per partition batch), then returns its count. */
  async countReaching(schema: string, table: string, rows: number, timeoutMs = 30_000): Promise<number> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const n = await this.count(schema, table);
      if (n >= rows || Date.now() > deadline) return n;
      await new Promise((r) => setTimeout(r, 200));
    }
  }

  /** The records `schema`'s projection could not apply, as `<topic>/<partition>/<offset>`, sorted. */
  async unappliedKeys(schema: string): Promise<string[]> {
    const rows = await this.query<{ key: string }>(`SELECT topic || '/' || partition || '/' || "offset" AS key FROM ${ident(schema)}.unapplied_records`);
    return rows.map((r) => r.key).sort();
  }

  /** Row count of one table. */
  async count(schema: string, table: string): Promise<number> {
    const [row] = await this.query<{ n: string }>(`SELECT count(*) AS n FROM ${ident(schema)}.${ident(table)}`);
    return Number(row?.n ?? 0);
  }

  close(): Promise<void> {
    return this.pool.end();
  }
}

function ident(name: string): string {
  if (!/^[a-z_][a-z0-9_]{0,62}$/.test(name)) throw new Error('not a plain identifier');
  return `"${name}"`;
}

/** The digest without the tables a fold rewrites as it advances (its offsets), for comparing content only. */
export function withoutOffsets(digest: Record<string, { rows: number; md5: string }>): Record<string, { rows: number; md5: string }> {
  const { projection_offsets: _offsets, ...rest } = digest;
  return rest;
}

/**
 * The keys (`<topic>/<partition>/<offset>` of the parked record) on the namespace's dead-letter
 * topic that name `topicId`, sorted. The topic carries raw records, so every one reads as "poison"
 * to the contract, which is how the replay hands over its key.
 */
export async function deadLettered(kafka: Kafka, namespace: string, topicId: TopicId): Promise<string[]> {
  const keys: string[] = [];
  const prefix = `${topicName(topicId, namespace)}/`;
  await replayTopic(kafka, 'deadLetter', { namespace, onRecord: () => undefined, onPoison: (p) => void (p.key?.startsWith(prefix) && keys.push(p.key)) });
  return keys.sort();
}

/** Waits until `topic` has grown by at least `count` records since the `before` snapshot (offsets only: cheap to poll). */
export async function grown(ends: TopicEnds, before: Record<string, string[]>, topic: TopicId, count: number, what: string): Promise<void> {
  await waitFor(async () => ((appended(before, await ends.of([topic]))[topic] ?? 0) >= count ? true : undefined), { timeoutMs: 30_000, intervalMs: 250, what });
}

/** How many events of each code the namespace's audit topic holds (one replay). */
export async function auditCodes(kafka: Kafka, namespace: string): Promise<Record<string, number>> {
  const codes: Record<string, number> = {};
  await replayTopic(kafka, 'audit', { namespace, onRecord: ({ event }) => void (isDecisionRecorded(event) && (codes[event.payload.code] = (codes[event.payload.code] ?? 0) + 1)) });
  return codes;
}

/** A fold's status and its schema's rows before the poison (the spec's snapshot). */
export interface PoisonBaseline {
  readonly fold: Readonly<Record<string, unknown>>;
  readonly database: Readonly<Record<string, { rows: number }>>;
}

/**
 * Waits until the fold behind `statusUrl` counts exactly `expected.poison` more unapplied records,
 * checks that it ignored exactly `expected.forged` forged grants and that `unapplied_records` of
 * `schema` grew by the poison; returns the status for the service's own checks.
 */
export async function expectPoisonCounted(
  db: Database,
  schema: string,
  statusUrl: string,
  before: PoisonBaseline,
  expected: { readonly poison: number; readonly forged: number },
): Promise<Record<string, number>> {
  const unapplied = (before.fold['unapplied'] as number) + expected.poison;
  const status = await waitFor(
    async () => {
      const s = await getJson<Record<string, number>>(statusUrl);
      return s['unappliedRecords'] === unapplied ? s : undefined;
    },
    { timeoutMs: 30_000, what: 'the fold to count the poison' },
  );
  expect({ unapplied: status['unappliedRecords'], untrusted: status['untrustedGrants'] }).toEqual({ unapplied, untrusted: (before.fold['untrusted'] as number) + expected.forged });
  const rows = (before.database['unapplied_records']?.rows ?? 0) + expected.poison;
  expect(await db.countReaching(schema, 'unapplied_records', rows)).toBe(rows);
  return status;
}
