import { type TopicEvent, type TopicId, type TraceContext } from '@gatehouse/contracts';

/** A decoded record with its position and the broker's append time. */
export interface DecodedRecord<T extends TopicId = TopicId> {
  readonly topic: string;
  readonly partition: number;
  /** Kafka offsets exceed 2^53 in theory: kept as decimal strings, as kafkajs does. */
  readonly offset: string;
  /** The log timestamp (LogAppendTime on gatehouse topics): the clock of every time rule. */
  readonly logTime: Date;
  readonly key: string | null;
  readonly event: TopicEvent<T>;
  /** The producer's trace context: its `traceparent` record header, else the envelope's `trace`. */
  readonly trace?: TraceContext | undefined;
}

/** A record that could not be decoded (or handled) and why, as it goes to the dead-letter topic. */
export interface PoisonRecord {
  readonly topic: string;
  readonly partition: number;
  readonly offset: string;
  readonly key: string | null;
  readonly value: Buffer | null;
  readonly code: string;
  readonly reason: string;
}
