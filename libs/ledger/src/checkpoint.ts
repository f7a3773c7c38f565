import { createHash, randomUUID } from 'node:crypto';
import { checkGrant, createEvent, type Keyring, type LedgerCheckpoint, LedgerCheckpointV1 } from '@gatehouse/contracts';
import { type LedgerEvent, restoreEntries } from './fold.js';
import { type BudgetState, createLedgerState, type KeyState, type LedgerState } from './state.js';

/**
 * Checkpoints of the ledger fold in its own log (issue 17). The fold's state splits by partition:
 * a key or budget changes only by the records of the partition its key maps to, and the
 * per-principal counts derive from the entries. So the state of one partition at one of its
 * offsets is a consistent cut on its own, and a checkpoint written into that partition lets the
 * topic delete every record before the checkpoint's cut.
 */

/** Most characters of state text in one checkpoint record (the broker's default record limit is 1 MiB). */
export const CHECKPOINT_CHUNK_CHARS = 200_000;

interface PartitionStateText {
  readonly format: 1;
  readonly keys: [string, KeyState][];
  readonly budgets: [string, BudgetState][];
}

const byKey = ([a]: [string, unknown], [b]: [string, unknown]) => (a < b ? -1 : a > b ? 1 : 0);

/** What a checkpoint holds of the fold's state: its keys and budgets (the counts derive from them). */
export interface CheckpointedState {
  readonly keys: ReadonlyMap<string, KeyState>;
  readonly budgets: ReadonlyMap<string, BudgetState>;
}

/**
 * The state of the keys and budgets of `partition`, as text (entries in key order: equal states
 * give equal text). Without `partitionOf`, `state` holds that partition's entries only
 * (`splitByPartition`).
 */
export function ledgerPartitionText(state: CheckpointedState, partition: number, partitionOf?: (key: string) => number): string {
  const ours = ([key]: [string, unknown]) => partitionOf === undefined || partitionOf(key) === partition;
  const keys = [...state.keys].filter(ours).sort(byKey);
  const budgets = [...state.budgets].filter(ours).sort(byKey);
  const text: PartitionStateText = { format: 1, keys, budgets };
  return JSON.stringify(text);
}

/** The keys and budgets of `state` per partition, in one pass (each key hashed once). */
export function splitByPartition(state: CheckpointedState, partitions: number, partitionOf: (key: string) => number): CheckpointedState[] {
  const parts = Array.from({ length: partitions }, () => ({ keys: new Map<string, KeyState>(), budgets: new Map<string, BudgetState>() }));
  for (const [key, entry] of state.keys) parts[partitionOf(key)]?.keys.set(key, entry);
  for (const [key, entry] of state.budgets) parts[partitionOf(key)]?.budgets.set(key, entry);
  return parts;
}

export interface CheckpointInput {
  readonly state: CheckpointedState;
  /** The topic's full name (namespace included). */
  readonly topic: string;
  readonly partition: number;
  readonly partitions: number;
  /** The next offset of `partition` that `state` has not applied. */
  readonly cut: bigint;
  /** The fold version (the snapshot codec's): another version's checkpoint is never loaded. */
  readonly fold: string;
  /** Which entries of `state` are this partition's; omitted: all of them are (`splitByPartition`). */
  readonly partitionOf?: (key: string) => number;
  /** Envelope fields; `subject` must map to `partition` (`checkpointSubject`). */
  readonly meta: { readonly source: string; readonly tenant: string; readonly subject: string };
  readonly chunkChars?: number;
}

/** The checkpoint of one partition as unsigned events, one per chunk, to append in order to that partition. */
export function checkpointEvents(input: CheckpointInput): LedgerEvent[] {
  const text = ledgerPartitionText(input.state, input.partition, input.partitionOf);
  const size = input.chunkChars ?? CHECKPOINT_CHUNK_CHARS;
  const chunks = Math.max(1, Math.ceil(text.length / size));
  const checkpointId = randomUUID();
  const digest = createHash('sha256').update(text).digest('hex');
  return Array.from({ length: chunks }, (_, chunk) =>
    createEvent(LedgerCheckpointV1, input.meta, {
      checkpointId,
      fold: input.fold,
      topic: input.topic,
      partition: input.partition,
      partitions: input.partitions,
      cut: input.cut.toString(),
      chunk,
      chunks,
      digest,
      data: text.slice(chunk * size, (chunk + 1) * size),
    }),
  );
}

/** A subject whose record key maps to `partition`: how a checkpoint reaches the partition it describes. */
export function checkpointSubject(partition: number, partitionOf: (key: string) => number): string {
  for (let salt = 0; salt < 1_000_000; salt += 1) {
    const subject = `ledger-checkpoint/${partition}/${salt}`;
    if (partitionOf(subject) === partition) return subject;
  }
  throw new RangeError('no checkpoint subject maps to the partition');
}

/** A checkpoint all of whose chunks were read, in order, and whose text matches its digest. */
export interface CompleteCheckpoint {
  readonly partition: number;
  readonly cut: bigint;
  readonly text: string;
}

type CheckpointChunk = LedgerCheckpoint['payload'];

interface Gathering {
  readonly first: CheckpointChunk;
  readonly parts: string[];
}

/** Incomplete checkpoints kept per partition while reading (a writer killed mid-way leaves one). */
const MAX_GATHERING = 4;

/**
 * Reads checkpoints out of a partition's records, in offset order: keeps, per partition, the
 * latest complete checkpoint of the fold version `fold` that the ledger service signed and that
 * was written into the topic and partition it describes. Everything else is passed over: a forged,
 * torn, misplaced, copied or other-version checkpoint never counts.
 */
export class CheckpointCollector {
  private readonly gathering = new Map<number, Map<string, Gathering>>();
  private readonly complete = new Map<number, CompleteCheckpoint>();

  constructor(
    private readonly trust: Keyring,
    private readonly where: { readonly topic: string; readonly partitions: number; readonly fold: string },
  ) {}

  /** One record of `partition`, in offset order. */
  offer(partition: number, event: LedgerEvent): void {
    if (event.type !== 'LedgerCheckpoint') return;
    const p = event.payload;
    if (p.partition !== partition || p.topic !== this.where.topic || p.fold !== this.where.fold || p.partitions !== this.where.partitions) return;
    if (!checkGrant(event, this.trust).trusted) return;
    let open = this.gathering.get(partition);
    if (!open) this.gathering.set(partition, (open = new Map()));
    let gathering = open.get(p.checkpointId);
    if (p.chunk === 0) {
      gathering = { first: p, parts: [p.data] };
      open.delete(p.checkpointId);
      open.set(p.checkpointId, gathering);
      if (open.size > MAX_GATHERING) open.delete(open.keys().next().value as string);
    } else if (gathering && gathering.parts.length === p.chunk && sameCheckpoint(gathering.first, p)) {
      gathering.parts.push(p.data);
    } else {
      // A chunk out of order, or of another writing: this checkpoint cannot complete.
      open.delete(p.checkpointId);
      return;
    }
    if (gathering.parts.length < p.chunks) return;
    open.delete(p.checkpointId);
    const text = gathering.parts.join('');
    if (createHash('sha256').update(text).digest('hex') !== p.digest) return;
    const cut = BigInt(p.cut);
    const previous = this.complete.get(partition);
    if (!previous || cut >= previous.cut) this.complete.set(partition, { partition, cut, text });
  }

  /** The latest complete checkpoint of `partition` whose cut is at least `atLeast`, if one was read. */
  latest(partition: number, atLeast: bigint): CompleteCheckpoint | undefined {
    const found = this.complete.get(partition);
    return found && found.cut >= atLeast ? found : undefined;
  }
}

const sameCheckpoint = (a: CheckpointChunk, b: CheckpointChunk) => a.chunks === b.chunks && a.digest === b.digest && a.cut === b.cut;

const isEntry = (entry: unknown): entry is [string, Record<string, unknown>] =>
  Array.isArray(entry) && entry.length === 2 && typeof entry[0] === 'string' && entry[1] !== null && typeof entry[1] === 'object' && !Array.isArray(entry[1]);

function parsePartition(text: string): PartitionStateText {
  const parsed = JSON.parse(text) as Partial<PartitionStateText> | null;
  if (parsed === null || typeof parsed !== 'object' || parsed.format !== 1 || !Array.isArray(parsed.keys) || !Array.isArray(parsed.budgets)) throw new TypeError('not a ledger checkpoint');
  if (!parsed.keys.every(isEntry) || !parsed.budgets.every(isEntry)) throw new TypeError('not a ledger checkpoint');
  return parsed as PartitionStateText;
}

/**
 * The fold's state from checkpoints of distinct partitions, trusting `trust` (what the fold of
 * the records after each cut goes on from). The per-principal counts are derived from the
 * entries by the fold's own rules (`restoreEntries`). The untrusted-events counter starts at 0:
 * it counts what the remaining log holds. Throws a TypeError on text that is not a checkpoint.
 */
export function restoreLedgerCheckpoints(trust: Keyring | 'in-process', texts: Iterable<string>): LedgerState {
  const state = createLedgerState(trust);
  for (const text of texts) {
    const part = parsePartition(text);
    restoreEntries(state, part.keys, part.budgets);
  }
  return state;
}
