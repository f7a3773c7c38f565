/**
 * A fold's state as text, and back: what lets a service start from a snapshot of its fold and the
 * offsets it was taken at instead of replaying its topic from offset 0. `version` names the fold
 * and the shape of its state: a snapshot written under another version is never loaded (the
 * engine replays from offset 0 instead, and says so).
 */
export interface SnapshotCodec<S> {
  readonly version: string;
  encode(state: S): string;
  /** Throws when `text` is not a snapshot of this version's state. */
  decode(text: string): S;
}

/** A stored snapshot: the fold's state after every record before `offsets` (the next offset to read, per partition). */
export interface FoldSnapshot {
  /** The codec version that wrote it. */
  readonly fold: string;
  readonly offsets: Readonly<Record<number, string>>;
  readonly state: string;
}

/**
 * Why a stored snapshot was not loaded: the engine replays from offset 0 instead. `ahead-of-projection`:
 * the projection's rows do not reach the snapshot's offsets (rows or offsets dropped by hand), so a
 * start from it would never write the rows before it. `behind-log-start`: the topic has deleted
 * records past the snapshot's offsets (the service was down longer than the topic keeps records);
 * the start goes to the checkpoints in the log instead.
 */
export type SnapshotRejection = 'other-version' | 'unreadable' | 'ahead-of-projection' | 'behind-log-start';

/** A snapshot as a projection keeps it: whether its rows reach the snapshot's offsets. */
export interface StoredFoldSnapshot {
  readonly snapshot: FoldSnapshot;
  readonly aheadOfProjection: boolean;
  /** Per partition, the log time (ms) of the last record the projection applied: a start reads at least that far. */
  readonly partitionTimes: Readonly<Record<number, number>>;
}

type MapFields<S> = { [K in keyof S]: S[K] extends Map<string, unknown> ? K : never }[keyof S] & string;
type CounterFields<S> = { [K in keyof S]: S[K] extends { count: number } ? K : never }[keyof S] & string;

interface EncodedMapState {
  readonly format: 1;
  readonly maps: Record<string, [string, unknown][]>;
  readonly counters: Record<string, number>;
}

const isPair = (entry: unknown): entry is [string, unknown] => Array.isArray(entry) && entry.length === 2 && typeof entry[0] === 'string';

/**
 * The codec of a state made of maps of JSON values (entries frozen, as the folds keep them) and
 * counters (`{ count }`), beside fields `create` makes (keyrings, limits): what every service
 * fold's state is. Entries are written in key order, so two reads of the same records (their
 * partitions interleaved differently) give the same snapshot text; folds never depend on the order
 * of their maps.
 */
export function mapStateCodec<S extends object>(options: { version: string; create: () => S; maps: readonly MapFields<S>[]; counters: readonly CounterFields<S>[] }): SnapshotCodec<S> {
  const { version, create, maps, counters } = options;
  return Object.freeze({
    version,
    encode(state: S): string {
      const encoded: EncodedMapState = {
        format: 1,
        // By key: a fold over several partitions inserts keys in the order they were read, which differs between reads; the state does not.
        maps: Object.fromEntries(maps.map((name) => [name, [...(state[name] as Map<string, unknown>)].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))])),
        counters: Object.fromEntries(counters.map((name) => [name, (state[name] as { count: number }).count])),
      };
      return JSON.stringify(encoded);
    },
    decode(text: string): S {
      const parsed = JSON.parse(text) as Partial<EncodedMapState> | null;
      if (parsed === null || typeof parsed !== 'object' || parsed.format !== 1 || typeof parsed.maps !== 'object' || typeof parsed.counters !== 'object') throw new TypeError('not a snapshot of this fold');
      const state = create();
      for (const name of maps) {
        const entries = parsed.maps?.[name];
        if (!Array.isArray(entries) || !entries.every(isPair)) throw new TypeError('not a snapshot of this fold');
        const target = state[name] as Map<string, unknown>;
        // Arrays stay open: folds append to them (an approval's history); other entries are frozen values.
        for (const [key, value] of entries) target.set(key, value !== null && typeof value === 'object' && !Array.isArray(value) ? Object.freeze(value) : value);
      }
      for (const name of counters) {
        const count = parsed.counters?.[name];
        if (!Number.isSafeInteger(count) || (count as number) < 0) throw new TypeError('not a snapshot of this fold');
        (state[name] as { count: number }).count = count as number;
      }
      return state;
    },
  });
}
