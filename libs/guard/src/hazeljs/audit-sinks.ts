// HazelJS's audit sinks as gatehouse `AuditSink`s: each receives gatehouse's `AuditEvent` (the one
// record shape the audit topic, the SIEM feeds and `gatehouse audit verify` read), never the
// arguments. Console and in-memory are small sinks of their own; Composite is `combineAuditSinks`,
// Kafka is `kafkaAuditSink`; OTel writes a span per event through `@opentelemetry/api` only.
import { type Attributes, isSpanContextValid, trace as otelTrace, type TraceAPI } from '@opentelemetry/api';
import { GatehouseError, readOptions } from '@gatehouse/contracts';
import { kafkaAuditSink, type KafkaAuditSink, type KafkaAuditSinkOptions } from '../audit/kafka-sink.js';
import { type AuditSinkLike, combineAuditSinks } from '../audit/sinks.js';
import { type AuditEvent, type AuditSink } from '../audit/types.js';
import { configError, unsupported } from '@gatehouse/gatekeeper/hazeljs';

function options(where: string, value: unknown, known: readonly string[]): Readonly<Record<string, unknown>> {
  try {
    return readOptions(where, value, known);
  } catch (cause) {
    throw configError(cause instanceof Error ? cause.message : `${where}: invalid options`, { field: where });
  }
}

/** HazelJS's default sink: one JSON line per event on stdout, for a log shipper. Best-effort. */
export class ConsoleAuditSink implements AuditSink {
  readonly required = false;
  private readonly print: (line: string) => void;

  /** `print` replaces stdout (a test, a logger). */
  constructor(opts: { readonly print?: (line: string) => void } = {}) {
    const o = options('ConsoleAuditSink', opts, ['print']);
    if (o['print'] !== undefined && typeof o['print'] !== 'function') throw configError('ConsoleAuditSink: print must be a function', { field: 'print' });
    this.print = (o['print'] as ((line: string) => void) | undefined) ?? ((line) => void process.stdout.write(`${line}\n`));
  }

  write(event: AuditEvent): void {
    this.print(JSON.stringify(event));
  }
}

/** Events kept in process memory, for tests and local demos: lost on restart, split per replica. */
export class InMemoryAuditSink implements AuditSink {
  readonly required = false;
  private readonly kept: AuditEvent[] = [];
  private readonly max: number;
  private dropped = 0;

  /** `maxEvents` (default 10,000): the oldest are dropped past it, and counted in `evicted`. */
  constructor(opts: { readonly maxEvents?: number } = {}) {
    const o = options('InMemoryAuditSink', opts, ['maxEvents']);
    const max = o['maxEvents'] ?? 10_000;
    if (!Number.isSafeInteger(max) || (max as number) < 1) throw configError('InMemoryAuditSink: maxEvents must be a positive integer', { field: 'maxEvents' });
    this.max = max as number;
  }

  /** The events, oldest first (a copy). */
  get events(): readonly AuditEvent[] {
    return [...this.kept];
  }

  /** Events dropped for `maxEvents`. */
  get evicted(): number {
    return this.dropped;
  }

  write(event: AuditEvent): void {
    this.kept.push(event);
    if (this.kept.length > this.max) {
      this.kept.shift();
      this.dropped += 1;
    }
  }
}

/**
 * Every event to every sink, in parallel, even when one fails (HazelJS stopped at the first
 * failure); `required` when any part is. Over `combineAuditSinks`.
 */
export class CompositeAuditSink implements AuditSink {
  readonly required: boolean;
  private readonly combined: AuditSink;

  constructor(sinks: readonly AuditSinkLike[]) {
    if (!Array.isArray(sinks) || sinks.length === 0) throw configError('CompositeAuditSink needs a non-empty list of sinks', { field: 'sinks' });
    try {
      this.combined = combineAuditSinks(...sinks);
    } catch (cause) {
      throw configError(cause instanceof Error ? cause.message : 'CompositeAuditSink: invalid sink', { field: 'sinks' });
    }
    this.required = this.combined.required === true;
  }

  write(event: AuditEvent): Promise<void> {
    return Promise.resolve(this.combined.write(event));
  }

  flush(): Promise<void> {
    return this.combined.flush?.() ?? Promise.resolve();
  }

  close(): Promise<void> {
    return this.combined.close?.() ?? Promise.resolve();
  }
}

/**
 * The shared, fail-closed sink HazelJS built with `createAuditTransportSink(KafkaAuditTransport)`:
 * gatehouse's `kafkaAuditSink` on `gatehouse.audit.v1` (`mode: 'required'` is awaited and fails
 * closed; signed checkpoints with `agentKey`).
 */
export function createKafkaAuditSink(opts: KafkaAuditSinkOptions): KafkaAuditSink {
  return kafkaAuditSink(opts);
}

/** Refused: a HazelJS transport to a topic of its own would bypass the signed, chained audit topic. */
export function createAuditTransportSink(_transport?: unknown): never {
  throw unsupported('createAuditTransportSink', 'createKafkaAuditSink (gatehouse.audit.v1, read by audit-export and gatehouse audit verify)');
}

/** Spans with no valid context come from the API's no-op tracer: nothing would reach a collector. */
export const OTEL_NOT_RECORDING = 'AUDIT.OTEL_NOT_RECORDING';

function attributesOf(event: AuditEvent): Attributes {
  const attributes: Attributes = {
    'gatehouse.audit.id': event.id,
    'gatehouse.boundary': event.boundary,
    'gatehouse.action': event.action,
    'gatehouse.resource': event.resource,
    'gatehouse.decision': event.decision,
    'gatehouse.code': event.code,
    'gatehouse.reason': event.reason,
  };
  const c = event.context;
  if (c.tenant !== undefined) attributes['gatehouse.tenant'] = c.tenant;
  if (c.agentId !== undefined) attributes['gatehouse.agent_id'] = c.agentId;
  if (c.runId !== undefined) attributes['gatehouse.run_id'] = c.runId;
  if (event.policy !== undefined) attributes['gatehouse.policy'] = event.policy.name;
  if (event.detections !== undefined) attributes['gatehouse.detections'] = [...event.detections];
  if (event.actor !== undefined) attributes['gatehouse.actor'] = `${event.actor.kind}:${event.actor.id}`;
  return attributes;
}

/**
 * A span per audit event, through `@opentelemetry/api` (`trace` from the caller, else the API's
 * global one): the host registers the SDK and exporter. Without one the API's tracer is a no-op
 * and the event would vanish, so the write fails (`AUDIT.OTEL_NOT_RECORDING`): in a critical
 * gatekeeper the call fails closed instead of losing its audit trail.
 */
export function createOtelAuditSink(otel: { readonly trace: TraceAPI } = { trace: otelTrace }, tracerName = '@gatehouse/guard'): AuditSink {
  const o = options('createOtelAuditSink', otel, ['trace']);
  const api = o['trace'] as TraceAPI | undefined;
  if (api === undefined || typeof api.getTracer !== 'function') throw configError('createOtelAuditSink needs { trace } from @opentelemetry/api', { field: 'trace' });
  if (typeof tracerName !== 'string' || tracerName.length === 0) throw configError('createOtelAuditSink: tracerName must be a non-empty string', { field: 'tracerName' });
  return {
    required: false,
    write(event: AuditEvent): void {
      const span = api.getTracer(tracerName).startSpan(`gatehouse.audit ${event.action}`, { attributes: attributesOf(event), startTime: new Date(event.timestamp) });
      const recording = isSpanContextValid(span.spanContext());
      span.end();
      if (!recording) throw new GatehouseError(OTEL_NOT_RECORDING, 'no OpenTelemetry tracer provider is registered: the audit span would be dropped', { category: 'unavailable' });
    },
  };
}
