import { type Keyring, signEvent, type SigningKey, topicName } from '@gatehouse/contracts';
import { type CheckpointStart, type FoldCheckpoints, keyPartitioner, offsetsAtTime, replayTopic, type RowPosition } from '@gatehouse/kafka';
import { CheckpointCollector, checkpointEvents, checkpointSubject, type LedgerEvent, type LedgerState, restoreLedgerCheckpoints, splitByPartition } from '@gatehouse/ledger';
import { type Kafka } from 'kafkajs';
import { ledgerMeta } from './ledger-events.js';

/** Default time between two checkpoints of the ledger's state into its log (GATEHOUSE_LEDGER_CHECKPOINT_MS), ms. */
export const DEFAULT_CHECKPOINT_INTERVAL_MS = 60 * 60 * 1000;

/**
 * How often a partition whose state has not changed is checkpointed again, ms: often enough that
 * its last checkpoint never ages out of the topic, rarely enough that an idle ledger does not fill
 * its log with copies of the same state.
 */
export const CHECKPOINT_REFRESH_MS = 24 * 60 * 60 * 1000;

/** What the ledger topic must keep with checkpoints every `intervalMs`: two intervals, and two refreshes of an unchanged partition. */
export function checkpointRetentionNeedMs(intervalMs: number): number {
  return 2 * Math.max(intervalMs, CHECKPOINT_REFRESH_MS);
}

/**
 * How the ledger starts over a log whose beginning retention deleted: it reads each partition for
 * the latest complete checkpoint the ledger service signed in it, and starts each partition's fold
 * from that checkpoint's cut. It reads the last two refresh periods first (every partition has a
 * checkpoint there while the service runs), and from where each partition begins only for those
 * that have none there. A partition that lost records and holds no such checkpoint makes the start
 * refuse (the engine's FOLD.HISTORY_LOST): a fold of a log that lost a reservation could let the
 * call run twice.
 */
export function ledgerCheckpoints(options: {
  readonly kafka: Kafka;
  readonly namespace?: string | undefined;
  readonly keyring: Keyring;
  /** The fold version (the snapshot codec's): only its checkpoints are read. */
  readonly fold: string;
  readonly timeoutMs: number;
}): FoldCheckpoints<LedgerState> {
  const topic = topicName('ledger', options.namespace);
  /** Reads each partition from its offset in `from` to its end, offering every record to `collector`. */
  const scan = (collector: CheckpointCollector, from: ReadonlyMap<number, bigint>) =>
    replayTopic(options.kafka, 'ledger', {
      namespace: options.namespace,
      timeoutMs: options.timeoutMs,
      timeoutOnStall: true,
      fromOffsets: Object.fromEntries([...from].map(([p, o]) => [p, o.toString()])),
      onRecord: (record) => collector.offer(record.partition, record.event),
    });
  return {
    async restore(starts: ReadonlyMap<number, bigint>): Promise<CheckpointStart<LedgerState> | undefined> {
      const collector = new CheckpointCollector(options.keyring, { topic, partitions: starts.size, fold: options.fold });
      const admin = options.kafka.admin();
      await admin.connect();
      let recent: Record<number, string>;
      let ends: Map<number, bigint>;
      try {
        recent = await offsetsAtTime(admin, topic, new Date(Date.now() - 2 * CHECKPOINT_REFRESH_MS));
        ends = new Map((await admin.fetchTopicOffsets(topic)).map((o) => [o.partition, BigInt(o.high)]));
      } finally {
        await admin.disconnect();
      }
      const later = (a: bigint, b: bigint) => (a > b ? a : b);
      await scan(collector, new Map([...starts].map(([p, low]) => [p, later(BigInt(recent[p] ?? '0'), low)])));
      // Only the partitions that lost records and have no checkpoint in the recent window are read
      // again, from where they begin (the others from their end: nothing).
      const missing = [...starts].filter(([p, low]) => low > 0n && !collector.latest(p, low));
      if (missing.length > 0) {
        const from = new Map([...starts].map(([p]) => [p, ends.get(p) ?? 0n]));
        for (const [p, low] of missing) from.set(p, low);
        await scan(collector, from);
      }
      const offsets = new Map<number, bigint>();
      const texts: string[] = [];
      for (const [partition, low] of starts) {
        const found = collector.latest(partition, low);
        if (!found) {
          if (low > 0n) return undefined;
          continue;
        }
        offsets.set(partition, found.cut);
        texts.push(found.text);
      }
      let state: LedgerState;
      try {
        state = restoreLedgerCheckpoints(options.keyring, texts);
      } catch {
        // Signed by the service and matching its digest, yet not a state: nothing to start from.
        return undefined;
      }
      const partitionOf = keyPartitioner(starts.size);
      const at = (key: string): RowPosition => {
        const partition = partitionOf(key);
        return { partition, offset: (offsets.get(partition) ?? 1n) - 1n };
      };
      const rows = new Map<string, Map<string, RowPosition>>([
        ['keys', new Map([...state.keys.keys()].map((key) => [key, at(key)]))],
        ['budgets', new Map([...state.budgets.keys()].map((key) => [key, at(key)]))],
      ]);
      return { state, offsets, rows };
    },
  };
}

/**
 * The checkpoint of each partition of `cut` (the fold's state and applied offsets, read between
 * two records; `only`: these partitions, default all), signed, with the events in the order to
 * append them. Made at once: the state moves on as soon as the caller awaits.
 */
export function ledgerCheckpointEvents(
  cut: { readonly state: LedgerState; readonly offsets: ReadonlyMap<number, bigint> },
  options: { readonly topic: string; readonly partitions: number; readonly fold: string; readonly signingKey: SigningKey; readonly only?: readonly number[] },
): [partition: number, events: LedgerEvent[]][] {
  const { topic, partitions, fold, signingKey } = options;
  const partitionOf = keyPartitioner(partitions);
  const split = splitByPartition(cut.state, partitions, partitionOf);
  const chosen = options.only ?? Array.from({ length: partitions }, (_, partition) => partition);
  return chosen.map((partition) => [
    partition,
    checkpointEvents({
      state: split[partition] ?? { keys: new Map(), budgets: new Map() },
      topic,
      partition,
      partitions,
      cut: cut.offsets.get(partition) ?? 0n,
      fold,
      meta: ledgerMeta(checkpointSubject(partition, partitionOf)),
    }).map((event) => signEvent(event, signingKey)),
  ]);
}
