import { Partitioners } from '../kafkajs.js';

/**
 * The partition a record key goes to on a topic of `partitions` partitions: the default
 * partitioner's (murmur2, as the Java client), which every producer of the suite uses. What lets a
 * reader ask how far the partition of one key has come.
 */
export function keyPartitioner(partitions: number): (key: string) => number {
  if (!Number.isSafeInteger(partitions) || partitions < 1) throw new TypeError('partitions must be a positive integer');
  const partitioner = Partitioners.DefaultPartitioner();
  const partitionMetadata = Array.from({ length: partitions }, (_, partitionId) => ({ partitionId, leader: 0, replicas: [0], isr: [0], partitionErrorCode: 0 }));
  return (key) => partitioner({ topic: 'keys', partitionMetadata, message: { key, value: null } });
}

/** The log time each partition has reached, as the records a reader applied say. */
export class PartitionTimes {
  private readonly times = new Map<number, number>();

  constructor(private readonly partitionOf: (key: string) => number) {}

  /** A record at `logTime` was applied on `partition`. */
  advance(partition: number, logTime: number): void {
    if (logTime > (this.times.get(partition) ?? Number.NEGATIVE_INFINITY)) this.times.set(partition, logTime);
  }

  /** How far the partition of `key` has come (undefined: nothing read on it yet). */
  readonly timeOf = (key: string): number | undefined => this.times.get(this.partitionOf(key));
}
