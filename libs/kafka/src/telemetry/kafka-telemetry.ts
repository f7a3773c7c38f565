import { type Attributes, context, type Counter, type Histogram, type MeterProvider, metrics, SpanKind, SpanStatusCode, trace } from '@opentelemetry/api';
import { type DecisionRecorded, type TopicId } from '@gatehouse/contracts';
import { type DecodedRecord } from '../records.js';
import { parentContext } from './trace-context.js';

/** Instrumentation scope of the Kafka plumbing's metrics and spans (services, fold readers, the guard's gateway). */
export const KAFKA_TELEMETRY_SCOPE = '@gatehouse/kafka';

/** The metric names this package records; every attribute is a name, code, enum or number, never content. */
export const KAFKA_METRIC = {
  /** Audit decisions a service appended (its security reports, a policy decision), by boundary, decision, code. */
  decisions: 'gatehouse.decisions',
  /** A writer's append until the fold's verdict on its own event, ms, by topic and outcome. */
  decisionLatency: 'gatehouse.fold.decision.latency',
  /** Records between a partition's high watermark and what a live reader has handed over, by topic and partition. */
  foldLag: 'gatehouse.fold.lag',
  /** Records parked on the dead-letter topic, by the topic they came from and code. */
  deadLetters: 'gatehouse.dead_letters',
  /** Granting events a fold ignored for their signature, by topic and reason. */
  untrustedGrants: 'gatehouse.untrusted_grants',
} as const;

interface Instruments {
  readonly provider: MeterProvider;
  readonly decisions: Counter;
  readonly decisionLatency: Histogram;
  readonly deadLetters: Counter;
  readonly untrustedGrants: Counter;
}

/** Per live reader, its partitions' lag; the gauge reports them all. A reader drops its own when it stops. */
const lagReaders = new Set<Map<number, { readonly attributes: Attributes; value: number }>>();
let current: Instruments | undefined;

/**
 * The instruments of the global MeterProvider, made again when it changes: with no SDK registered
 * they are the API's no-ops; a service registers its SDK before anything here is first used
 * (`@gatehouse/service-runtime` `startTelemetry`), and a test may register its own.
 */
function instruments(): Instruments {
  const provider = metrics.getMeterProvider();
  if (current?.provider === provider) return current;
  const meter = provider.getMeter(KAFKA_TELEMETRY_SCOPE);
  meter.createObservableGauge(KAFKA_METRIC.foldLag, { description: 'Records on a partition not yet handed over by a live reader' }).addCallback((result) => {
    for (const reader of lagReaders) for (const { attributes, value } of reader.values()) result.observe(value, attributes);
  });
  current = {
    provider,
    decisions: meter.createCounter(KAFKA_METRIC.decisions, { description: 'Audit decisions a service appended, by boundary, decision and code' }),
    decisionLatency: meter.createHistogram(KAFKA_METRIC.decisionLatency, { description: "A writer's append until the fold's verdict on its event", unit: 'ms' }),
    deadLetters: meter.createCounter(KAFKA_METRIC.deadLetters, { description: 'Records parked on the dead-letter topic' }),
    untrustedGrants: meter.createCounter(KAFKA_METRIC.untrustedGrants, { description: 'Granting events ignored for their signature' }),
  };
  return current;
}

/** Counts one audit decision a service appended. */
export function countDecision(event: DecisionRecorded): void {
  instruments().decisions.add(1, { boundary: event.payload.boundary, decision: event.payload.outcome, code: event.payload.code });
}

/** Records how long a writer waited for its verdict: `answered`, `refused` (its event failed its contract) or `unavailable`. */
export function recordDecisionLatency(topic: string, startedAt: number, outcome: 'answered' | 'refused' | 'unavailable'): void {
  instruments().decisionLatency.record(Math.max(0, performance.now() - startedAt), { topic, outcome });
}

/** Counts records parked on the dead-letter topic, per topic and code. */
export function countDeadLetters(poison: readonly { readonly topic: string; readonly code: string }[]): void {
  const counter = instruments().deadLetters;
  for (const p of poison) counter.add(1, { topic: p.topic, code: p.code });
}

/** Counts a granting event a fold ignored for its signature. */
export function countUntrustedGrant(topic: string, reason: string): void {
  instruments().untrustedGrants.add(1, { topic, reason });
}

/** A live reader's lag per partition of `topic`, reported by the `gatehouse.fold.lag` gauge until `close`. */
export class LagReport {
  private readonly partitions = new Map<number, { readonly attributes: Attributes; value: number }>();

  constructor(private readonly topic: string) {
    lagReaders.add(this.partitions);
    // The gauge's callback is registered with the instruments: make sure they exist.
    instruments();
  }

  /** A batch of `partition` was handed over up to `next`; the broker's end was `highWatermark`. */
  batchEnd(partition: number, next: bigint, highWatermark: string | undefined): void {
    if (highWatermark === undefined || !/^\d+$/.test(highWatermark)) return;
    const lag = BigInt(highWatermark) - next;
    const value = Number(lag > 0n ? lag : 0n);
    const entry = this.partitions.get(partition);
    if (entry) entry.value = value;
    else this.partitions.set(partition, { attributes: { topic: this.topic, partition }, value });
  }

  /** The partition moved to another reader. */
  drop(partition: number): void {
    this.partitions.delete(partition);
  }

  close(): void {
    lagReaders.delete(this.partitions);
  }
}

/** The consumer span a fold applies a traced record in: `approvals.apply`, `ledger.apply`, ... */
export function applySpanName(topicId: TopicId): string {
  return `${topicId}.apply`;
}

/**
 * Hands `record` to `work` inside a consumer span named `spanName` whose parent is the trace the
 * record carries (its `traceparent` header, else its envelope's `trace`): a service continues the
 * producer's trace where it applies the record. Without a span name or a trace on the record, just
 * calls `work`. Attributes: where the record is, its id, type and tenant; never its payload.
 */
export function handOver<R>(spanName: string | undefined, record: DecodedRecord, work: () => R | Promise<R>): R | Promise<R> {
  // The untraced path allocates nothing: most records of a run with the SDK off carry no trace.
  if (spanName === undefined || record.trace === undefined) return work();
  return inConsumerSpan(spanName, record, work);
}

async function inConsumerSpan<R>(spanName: string, record: DecodedRecord, work: () => R | Promise<R>): Promise<R> {
  const span = trace.getTracer(KAFKA_TELEMETRY_SCOPE).startSpan(
    spanName,
    {
      kind: SpanKind.CONSUMER,
      attributes: {
        'messaging.system': 'kafka',
        'messaging.destination.name': record.topic,
        'messaging.kafka.partition': record.partition,
        'messaging.kafka.offset': record.offset,
        'gatehouse.event_id': record.event.id,
        'gatehouse.event_type': record.event.type,
        'gatehouse.tenant': record.event.tenant,
      },
    },
    parentContext(record.trace),
  );
  try {
    return await context.with(trace.setSpan(context.active(), span), work);
  } catch (error) {
    span.setStatus({ code: SpanStatusCode.ERROR });
    throw error;
  } finally {
    span.end();
  }
}
