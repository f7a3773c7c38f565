import { randomUUID } from 'node:crypto';
import { GatehouseError } from '@gatehouse/contracts';
import { type FoldLog } from '@gatehouse/kafka';
import { type Admin } from 'kafkajs';
import { type DataSource, type EntityManager } from 'typeorm';
import { ProjectionOffsets, type StoredPosition } from '../database.js';
import { schemaIdent } from './projection-spec.js';

// Which log a projection's rows came from (issue 15, attack 8: a database that outlived its
// broker kept serving rows of a log that no longer exists).
//
// Kafka 3 names a topic by a topic id, but kafkajs 2.2.4 speaks Metadata up to v6 and the topic
// id came with v10 (KIP-516): `fetchTopicMetadata` has no id to give. The identity kept instead:
// - the cluster id (`describeCluster`): a new broker, a re-formatted or restored cluster, another
//   cluster behind the same address all have another one;
// - per partition, the anchor: the offset and log append time of the last record the projection
//   applied before its stored offset. The broker's time index says where that time is in the log
//   now (ListOffsets by timestamp, no consumer needed): in the log the rows came from, the
//   anchor's offset lies at or after the first offset with that time and before the first offset
//   with a later one. A topic deleted and recreated starts again at offset 0 with records
//   appended after the deletion, so every record has a later time: the lookups land elsewhere,
//   or the partition ends before the stored offset. Retention that expires the anchor moves the
//   log start past it, which a recreated log (starting at 0) cannot do. Topics use
//   LogAppendTime; a broker clock that ran backwards could make the check fail on a good log,
//   which rebuilds or refuses: it fails closed.

/** Why a log is not the one a projection's rows came from: a stable code, no data. */
export type LogChange =
  /** The projection holds rows of another topic (another namespace). */
  | 'topic-changed'
  /** The broker's cluster id is not the one the rows were built from. */
  | 'cluster-changed'
  /** A partition the rows came from is not in the topic. */
  | 'partition-missing'
  /** A partition ends before the offset the rows are valid up to. */
  | 'log-shorter'
  /** The record at an anchor's offset is not the one the projection applied. */
  | 'anchor-differs'
  /** Offsets without any identity (stored before identities were kept): nothing ties them to this log. */
  | 'unverified'
  /** The rows were rebuilt (by another replica) while this process held those of before. */
  | 'rebuilt-elsewhere';

export type LogVerdict =
  | { readonly kind: 'same'; readonly generation: string }
  /** Nothing stored yet: the log is the projection's from now on. */
  | { readonly kind: 'new' }
  /** Anchors that match this log but no identity yet (stored before identities were kept). */
  | { readonly kind: 'adopt' }
  | { readonly kind: 'changed'; readonly change: LogChange };

/** What the schema holds about a projection's log. */
export interface StoredLog {
  readonly identity?: { readonly clusterId: string; readonly generation: string };
  /** The projection holds offsets or an identity of another topic (exclusive projections only). */
  readonly otherTopic: boolean;
  readonly positions: readonly StoredPosition[];
}

/** What the broker says about the log now. */
export interface LiveLog {
  readonly clusterId: string;
  readonly partitions: ReadonlyMap<number, { readonly low: bigint; readonly high: bigint }>;
  /** Per anchored partition: the first offset with a time at or after the anchor's, and after it. */
  readonly lookups: ReadonlyMap<number, { readonly atTime: bigint; readonly afterTime: bigint }>;
}

/** A projection whose rows come from one topic, as the log check sees it. */
export type ProjectedLog = {
  /** The projection's name in `projection_offsets` and `projection_logs`. */
  readonly projection: string;
  /** The topic's full name (namespace included). */
  readonly topic: string;
  /**
   * `exclusive`: the projection's tables hold the rows of one topic, so rows of any other topic are
   * another log's. `per-topic`: rows carry their topic and several topics share the tables.
   */
  readonly scope: 'exclusive' | 'per-topic';
} & (
  | {
      /** On another log the service drops the rows and rebuilds them from offset 0 of this one. */
      readonly onChange: 'rebuild';
      /** Deletes the rows of `topic` (every row when exclusive), inside the rebuild's transaction. */
      discard(manager: EntityManager, schemaSql: string, topic: string): Promise<void>;
    }
  | {
      /** On another log the service keeps the rows and serves none of them (its /health says why). */
      readonly onChange: 'refuse';
    }
);

/**
 * A service's projection (`ProjectionSpec`) as the log check sees it: its tables hold one topic's
 * rows, and it is rebuilt on another log. A fold service replays its topic from offset 0 on every
 * start anyway (the fold lives in memory), so a rebuild costs one rewrite of the rows.
 */
export function specLog(spec: { readonly name: string; readonly tables: readonly { readonly table: string }[] }, topic: string): ProjectedLog {
  return {
    projection: spec.name,
    topic,
    scope: 'exclusive',
    onChange: 'rebuild',
    discard: async (manager, schemaSql) => {
      const tables = [...spec.tables.map((t) => t.table), 'unapplied_records'].map((t) => `${schemaSql}.${t}`);
      await manager.query(`TRUNCATE ${tables.join(', ')}`);
      // The fold's snapshot is of the old log too: the start replays from offset 0 of this one.
      await manager.query(`DELETE FROM ${schemaSql}.fold_snapshots WHERE projection = $1`, [spec.name]);
    },
  };
}

const changed = (change: LogChange): LogVerdict => ({ kind: 'changed', change });

function positionChange(position: StoredPosition, live: LiveLog, identified: boolean): LogChange | undefined {
  const partition = live.partitions.get(position.partition);
  if (!partition) return 'partition-missing';
  if (partition.high < position.nextOffset) return 'log-shorter';
  const anchor = position.anchor;
  // No anchor: the partition held only records without a log time the projection could apply
  // (they fail their contract), so it served no rows; rows of before identities prove nothing.
  if (!anchor) return identified ? undefined : 'unverified';
  if (anchor.offset < partition.low) return undefined;
  const lookup = live.lookups.get(position.partition);
  if (!lookup) return 'anchor-differs';
  return lookup.atTime <= anchor.offset && anchor.offset < lookup.afterTime ? undefined : 'anchor-differs';
}

/** Whether `live` is the log `stored` came from: pure, so every rule is tested on its own. */
export function judgeLog(stored: StoredLog, live: LiveLog): LogVerdict {
  if (stored.otherTopic) return changed('topic-changed');
  const applied = stored.positions.filter((p) => p.nextOffset > 0n);
  const { identity } = stored;
  if (!identity && applied.length === 0) return { kind: 'new' };
  if (identity && identity.clusterId !== live.clusterId) return changed('cluster-changed');
  for (const position of applied) {
    const change = positionChange(position, live, identity !== undefined);
    if (change) return changed(change);
  }
  return identity ? { kind: 'same', generation: identity.generation } : { kind: 'adopt' };
}

/** Reads what `schema` holds about `target`'s log. */
export async function readStoredLog(manager: EntityManager, schema: string, target: ProjectedLog): Promise<StoredLog> {
  const s = schemaIdent(schema);
  const identities: { topic: string; cluster_id: string; generation: string }[] = await manager.query(
    `SELECT topic, cluster_id, generation::text AS generation FROM ${s}.projection_logs WHERE projection = $1`,
    [target.projection],
  );
  const own = identities.find((i) => i.topic === target.topic);
  let otherTopic = false;
  if (target.scope === 'exclusive') {
    const others: unknown[] = await manager.query(`SELECT 1 FROM ${s}.projection_offsets WHERE projection = $1 AND topic <> $2 AND next_offset > 0 LIMIT 1`, [target.projection, target.topic]);
    otherTopic = others.length > 0 || identities.some((i) => i.topic !== target.topic);
  }
  const positions = await new ProjectionOffsets(schema, target.projection).positions(manager, target.topic);
  return { ...(own ? { identity: { clusterId: own.cluster_id, generation: own.generation } } : {}), otherTopic, positions };
}

/** Asks the broker for the cluster id, the topic's offsets and where each anchor's time is. */
export async function readLiveLog(admin: Admin, topic: string, positions: readonly StoredPosition[]): Promise<LiveLog> {
  const cluster = await admin.describeCluster();
  const offsets = await admin.fetchTopicOffsets(topic);
  const partitions = new Map(offsets.map((o) => [o.partition, { low: BigInt(o.low), high: BigInt(o.high) }]));
  const lookups = new Map<number, { atTime: bigint; afterTime: bigint }>();
  const offsetAt = async (partition: number, time: number) => {
    const found = (await admin.fetchTopicOffsetsByTimestamp(topic, time)).find((o) => o.partition === partition);
    return BigInt(found?.offset ?? -1);
  };
  for (const { partition, anchor } of positions) {
    const range = partitions.get(partition);
    if (!anchor || !range || anchor.offset < range.low || anchor.offset >= range.high) continue;
    lookups.set(partition, { atTime: await offsetAt(partition, anchor.timeMs), afterTime: await offsetAt(partition, anchor.timeMs + 1) });
  }
  return { clusterId: cluster.clusterId ?? '', partitions, lookups };
}

/** The error a projection on another log answers with (its details name the projection and the change, nothing else). */
export function logChangedError(projection: string, change: LogChange): GatehouseError {
  return new GatehouseError('PROJECTION.LOG_CHANGED', 'the projection was built from another log than the broker has now; it is not served (see /health)', {
    category: 'unavailable',
    details: { projection, change },
  });
}

/**
 * A projection bound to the log its rows came from, by the generation `projection_logs` holds.
 * Writers call `assertCurrent` inside each write transaction, so a process still holding another
 * log's state (the log changed under it, or another replica rebuilt the rows) writes nothing.
 */
export class LogBinding {
  private changedWith: LogChange | undefined;

  constructor(
    readonly projection: string,
    readonly topic: string,
    readonly schema: string,
    readonly generation: string,
  ) {}

  /** Why the rows are no longer this log's; undefined while they are. */
  get change(): LogChange | undefined {
    return this.changedWith;
  }

  markChanged(change: LogChange): void {
    this.changedWith ??= change;
  }

  /** Throws PROJECTION.LOG_CHANGED once the rows are not this binding's any more. */
  async assertCurrent(manager: EntityManager): Promise<void> {
    if (!this.changedWith) {
      const rows: { generation: string }[] = await manager.query(
        `SELECT generation::text AS generation FROM ${schemaIdent(this.schema)}.projection_logs WHERE projection = $1 AND topic = $2`,
        [this.projection, this.topic],
      );
      if (rows[0]?.generation !== this.generation) this.markChanged('rebuilt-elsewhere');
    }
    if (this.changedWith) throw logChangedError(this.projection, this.changedWith);
  }
}

/**
 * Inside `manager`'s transaction: drops what the projection holds of `target.topic` (`discard`)
 * when asked, and records the log as the projection's with a new generation. Returns it.
 */
export async function writeLogIdentity(manager: EntityManager, schema: string, target: ProjectedLog, clusterId: string, discard: boolean): Promise<string> {
  const s = schemaIdent(schema);
  const exclusive = target.scope === 'exclusive';
  if (discard && target.onChange === 'rebuild') {
    await target.discard(manager, s, target.topic);
    // Every position into the old log goes with the rows (an export's too), and all of an exclusive projection's.
    await manager.query(`DELETE FROM ${s}.projection_offsets WHERE topic = $2 OR ($3 AND projection = $1)`, [target.projection, target.topic, exclusive]);
  }
  await manager.query(`DELETE FROM ${s}.projection_logs WHERE projection = $1 AND (topic = $2 OR $3)`, [target.projection, target.topic, exclusive]);
  const generation = randomUUID();
  await manager.query(`INSERT INTO ${s}.projection_logs (projection, topic, cluster_id, generation) VALUES ($1, $2, $3, $4)`, [target.projection, target.topic, clusterId, generation]);
  return generation;
}

/** The advisory lock the projection's writers take too, so a rebuild and a write never interleave. */
export function projectionLockKey(schema: string, projection: string, topic: string): string {
  return `${schema}/${projection}/${topic}`;
}

export interface BindOptions {
  readonly dataSource: DataSource;
  readonly admin: Admin;
  readonly schema: string;
  readonly target: ProjectedLog;
  readonly log?: FoldLog;
}

/**
 * Checks that the broker's log is the one `target`'s rows came from and binds the projection to
 * it. A first start records the log; a log that is not the rows' one is, by `target.onChange`,
 * rebuilt from (the rows dropped, the offsets back to 0: the service's replay fills them from this
 * log) or refused (PROJECTION.LOG_CHANGED, rows kept). Replicas starting together take turns: the
 * one that finds the identity moved under it looks again.
 */
export async function bindProjectionLog(options: BindOptions): Promise<LogBinding> {
  const { dataSource, admin, schema, target } = options;
  const log = options.log ?? (() => undefined);
  for (let attempt = 1; attempt <= 5; attempt += 1) {
    const stored = await readStoredLog(dataSource.manager, schema, target);
    const live = await readLiveLog(admin, target.topic, stored.positions).catch((cause: unknown) => {
      throw new GatehouseError('PROJECTION.LOG_UNAVAILABLE', 'the broker could not say which log the projection reads', {
        category: 'unavailable',
        retryable: true,
        details: { projection: target.projection },
        cause,
      });
    });
    const verdict = judgeLog(stored, live);
    if (verdict.kind === 'same') return new LogBinding(target.projection, target.topic, schema, verdict.generation);
    if (verdict.kind === 'changed' && target.onChange === 'refuse') {
      log('error', 'the projection was built from another log than the broker has now; serving none of it', { code: 'PROJECTION.LOG_CHANGED', projection: target.projection, change: verdict.change });
      throw logChangedError(target.projection, verdict.change);
    }
    const generation = await dataSource.transaction(async (manager) => {
      await manager.query('SELECT pg_advisory_xact_lock(hashtext($1))', [projectionLockKey(schema, target.projection, target.topic)]);
      const now = await readStoredLog(manager, schema, target);
      // Another replica recorded or rebuilt it since we looked: look again.
      if (now.identity?.generation !== stored.identity?.generation) return undefined;
      // A first start drops stray rows too (offsets deleted by hand): the replay writes them all again.
      return writeLogIdentity(manager, schema, target, live.clusterId, verdict.kind !== 'adopt');
    });
    if (generation === undefined) continue;
    if (verdict.kind === 'changed') {
      log('error', 'the projection was built from another log than the broker has now; rebuilt it from offset 0', { code: 'PROJECTION.LOG_CHANGED', projection: target.projection, change: verdict.change });
    } else {
      log('info', verdict.kind === 'new' ? 'projection bound to its log' : 'projection bound to its log (anchors matched)', { code: 'PROJECTION.LOG_BOUND', projection: target.projection });
    }
    return new LogBinding(target.projection, target.topic, schema, generation);
  }
  throw new GatehouseError('PROJECTION.LOG_BUSY', 'the projection log could not be bound: its identity kept changing', { category: 'unavailable', retryable: true, details: { projection: target.projection } });
}

/**
 * What keeps the projection in `schema` from being `target.topic`'s as the broker has it now
 * (undefined: nothing; a projection never bound, or bound by matching anchors, counts as its).
 * For tools that read a live projection without being its service (`replay --compare`).
 */
export async function projectionLogChange(manager: EntityManager, admin: Admin, schema: string, target: ProjectedLog): Promise<LogChange | undefined> {
  const stored = await readStoredLog(manager, schema, target);
  const verdict = judgeLog(stored, await readLiveLog(admin, target.topic, stored.positions));
  return verdict.kind === 'changed' ? verdict.change : undefined;
}

/** Whether `binding` still holds: the log is the one its rows came from, in its generation. Undefined when it does. */
export async function bindingChange(dataSource: DataSource, admin: Admin, binding: LogBinding, target: ProjectedLog): Promise<LogChange | undefined> {
  const stored = await readStoredLog(dataSource.manager, binding.schema, target);
  const verdict = judgeLog(stored, await readLiveLog(admin, target.topic, stored.positions));
  switch (verdict.kind) {
    case 'same':
      return verdict.generation === binding.generation ? undefined : 'rebuilt-elsewhere';
    case 'new':
    case 'adopt':
      return 'rebuilt-elsewhere';
    case 'changed':
      return verdict.change;
    default: {
      const exhaustive: never = verdict;
      return exhaustive;
    }
  }
}
