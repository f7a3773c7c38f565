import { topicName, type TopicId } from '@gatehouse/contracts';
import { keyPartitioner, replayTopic } from '@gatehouse/kafka';
import { type Kafka } from 'kafkajs';
import { type EntityManager } from 'typeorm';
import { type ProjectionSpec, schemaIdent } from './projection-spec.js';

/**
 * What `replay --compare` found of the live service's stored fold snapshot, the state a restart
 * begins from: `equal` (the fold of the log up to the snapshot's offsets is that state), `different`
 * (it is not: a restart would begin from a state the log does not make), or why it was not checked.
 */
export type SnapshotCheck =
  | { readonly status: 'equal' | 'different'; readonly offsets: Readonly<Record<number, string>>; readonly records: number }
  | { readonly status: 'none' | 'no-codec' | 'other-version' | 'unreadable' | 'log-trimmed' };

/**
 * Folds the topic from offset 0 up to the offsets of the snapshot stored in `schema` and compares
 * that state with the stored one, both pruned at the log times those records reached (the engine
 * prunes now and then, so a snapshot may hold settled state a later sweep lets go of; pruning
 * changes no verdict). Not checked when the broker has deleted the start of a partition: the
 * snapshot was then taken from records the log no longer has.
 */
export async function checkStoredSnapshot<T extends TopicId, S, V>(
  spec: ProjectionSpec<T, S, V>,
  manager: EntityManager,
  options: { kafka: Kafka; schema: string; namespace?: string | undefined; timeoutMs?: number },
): Promise<SnapshotCheck> {
  const codec = spec.fold.snapshot;
  if (!codec) return { status: 'no-codec' };
  const topic = topicName(spec.topicId, options.namespace);
  const rows: { fold: string; offsets: Record<string, string>; state: string }[] = await manager.query(
    `SELECT fold, offsets, state FROM ${schemaIdent(options.schema)}.fold_snapshots WHERE projection = $1 AND topic = $2 AND part = -1`,
    [spec.name, topic],
  );
  const stored = rows[0];
  if (!stored) return { status: 'none' };
  if (stored.fold !== codec.version) return { status: 'other-version' };
  let snapshotState: S;
  try {
    snapshotState = codec.decode(stored.state);
  } catch {
    return { status: 'unreadable' };
  }
  const admin = options.kafka.admin();
  await admin.connect();
  let partitions: number;
  try {
    const offsets = await admin.fetchTopicOffsets(topic);
    if (offsets.some((p) => BigInt(p.low) > 0n)) return { status: 'log-trimmed' };
    partitions = offsets.length;
  } finally {
    await admin.disconnect();
  }
  const until = new Map(Object.entries(stored.offsets).map(([p, o]) => [Number(p), BigInt(o)]));
  const state = spec.fold.create();
  const times = new Map<number, number>();
  let records = 0;
  await replayTopic(options.kafka, spec.topicId, {
    namespace: options.namespace,
    timeoutMs: options.timeoutMs ?? 120_000,
    onRecord: (record) => {
      if (BigInt(record.offset) >= (until.get(record.partition) ?? 0n)) return;
      records += 1;
      const logTime = record.logTime.getTime();
      spec.fold.apply(state, record.event, logTime);
      if (logTime > (times.get(record.partition) ?? Number.NEGATIVE_INFINITY)) times.set(record.partition, logTime);
    },
  });
  const partitionOf = keyPartitioner(Math.max(partitions, 1));
  const timeOf = (key: string) => times.get(partitionOf(key));
  spec.fold.prune?.(state, timeOf);
  spec.fold.prune?.(snapshotState, timeOf);
  const status = codec.encode(state) === codec.encode(snapshotState) ? 'equal' : 'different';
  return { status, offsets: stored.offsets, records };
}
