import { type TopicEvent, type TopicId, topicName } from '@gatehouse/contracts';
import { type AppendResult } from '../producer.js';
import { FoldEngine, type FoldEngineOptions, type FoldPhase, type FoldProjection, type FoldStatus, partitionCount } from './fold-engine.js';
import { OwnedFoldEngine, type PartitionOwners } from './owned-fold-engine.js';

/** A consistent cut of a fold's state (see `FoldEngine.cut`). */
export interface FoldCut<S> {
  readonly state: S;
  readonly offsets: ReadonlyMap<number, bigint>;
}

/**
 * The fold a service decides on, whichever way it runs: every partition of its topic (one
 * replica), or the partitions this replica owns (scale-out, `OwnedFoldEngine`). A service's rules
 * are written once over it.
 */
export interface ServiceFold<T extends TopicId, S, V> {
  readonly phase: FoldPhase;
  /** The number of partitions of the topic. */
  readonly partitions: number;
  decide(event: TopicEvent<T>): Promise<V>;
  append(event: TopicEvent<T>): Promise<AppendResult>;
  publishTo<U extends TopicId>(topicId: U, event: TopicEvent<U>): Promise<AppendResult>;
  /**
   * The state covering the partition of `recordKey` (FOLD.NOT_OWNER when this replica does not own
   * it), and the share of the topic's partitions it covers (1 for one replica, 1/partitions for an
   * owned partition): what a per-principal bound held by one state is scaled by.
   */
  stateFor(recordKey: string): { readonly state: S; readonly share: number };
  /** The states this replica holds, each with the partitions it covers and a consistent cut. */
  parts(): { readonly partitions: readonly number[]; readonly state: S; cut(): FoldCut<S> }[];
  /** Resolves once the record is applied and committed by this replica (see `FoldEngine.whenAnswered`). */
  whenAnswered(partition: number, offset: bigint, timeoutMs?: number): Promise<void>;
  status(): FoldStatus;
  stop(): Promise<void>;
}

export type ServiceFoldOptions<T extends TopicId, S, V> = FoldEngineOptions<T, S, V> & {
  /**
   * Scale-out: the replicas share the topic's partitions through the consumer group `group` and
   * this one folds only its own, each partition's projection from `projectionOf`, fenced by `owners`.
   * Without it, this replica folds every partition into `projection`.
   */
  readonly owned?: {
    readonly group: string;
    readonly owners: PartitionOwners;
    readonly projectionOf: (partition: number, epoch: number) => FoldProjection<T, S>;
    readonly sessionTimeoutMs?: number;
  };
};

/** Starts the service's fold the way its options say (see `ServiceFold`). */
export async function startServiceFold<T extends TopicId, S, V>(options: ServiceFoldOptions<T, S, V>): Promise<ServiceFold<T, S, V>> {
  const partitions = await partitionCount(options.kafka, topicName(options.topicId, options.namespace));
  const owned = options.owned;
  if (!owned) return wholeTopic(await FoldEngine.start(options), partitions);
  const { projection: _single, owned: _owned, ...rest } = options;
  const engine = await OwnedFoldEngine.start({
    ...rest,
    group: owned.group,
    owners: owned.owners,
    projectionOf: owned.projectionOf,
    ...(owned.sessionTimeoutMs !== undefined && { sessionTimeoutMs: owned.sessionTimeoutMs }),
  });
  return ownedPartitions(engine, partitions);
}

function wholeTopic<T extends TopicId, S, V>(engine: FoldEngine<T, S, V>, partitions: number): ServiceFold<T, S, V> {
  const all = Array.from({ length: partitions }, (_, p) => p);
  return {
    get phase() {
      return engine.phase;
    },
    partitions,
    decide: (event) => engine.decide(event),
    append: (event) => engine.append(event),
    publishTo: (topicId, event) => engine.publishTo(topicId, event),
    stateFor: () => ({ state: engine.state, share: 1 }),
    parts: () => [{ partitions: all, state: engine.state, cut: () => engine.cut() }],
    whenAnswered: (partition, offset, timeoutMs) => engine.whenAnswered(partition, offset, timeoutMs),
    status: () => engine.status(),
    stop: () => engine.stop(),
  };
}

function ownedPartitions<T extends TopicId, S, V>(engine: OwnedFoldEngine<T, S, V>, partitions: number): ServiceFold<T, S, V> {
  return {
    get phase() {
      return engine.phase;
    },
    partitions,
    decide: (event) => engine.decide(event),
    append: (event) => engine.append(event),
    publishTo: (topicId, event) => engine.publishTo(topicId, event),
    // A per-principal bound holds per partition, as that partition's share of it.
    stateFor: (recordKey) => ({ state: engine.stateFor(recordKey), share: 1 / partitions }),
    parts: () => engine.parts().map((part) => ({ partitions: [part.partition], state: part.state, cut: part.cut })),
    whenAnswered: (partition, offset, timeoutMs) => engine.whenAnswered(partition, offset, timeoutMs),
    status: () => engine.status(),
    stop: () => engine.stop(),
  };
}
