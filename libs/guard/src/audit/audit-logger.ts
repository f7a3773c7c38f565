import { randomUUID } from 'node:crypto';
import { BoundarySchema, DecisionOutcomeSchema, PrincipalKindSchema } from '@gatehouse/contracts';
import { type AuditSinkLike, isRequiredFailure, requiredSinkFailed, settle, toAuditSink } from './sinks.js';
import { type Actor, type AuditContext, type AuditEvent, type AuditSink } from './types.js';

/** What a gate passes to `record`: the logger adds `id` and `timestamp`. */
export type AuditInput = Omit<AuditEvent, 'id' | 'timestamp'>;

/** Receives every sink failure, with the event it concerned. Its own errors are swallowed. */
export type AuditSinkErrorHandler = (error: unknown, event: AuditEvent) => void;

export interface AuditLoggerOptions {
  /** Events kept in memory, oldest evicted first. Default 1,000; a positive integer. */
  readonly maxBuffered?: number;
  /** Where every event goes besides memory. A bare function is a best-effort sink. */
  readonly sink?: AuditSinkLike;
  /** Told of every sink failure, required or not. */
  readonly onSinkError?: AuditSinkErrorHandler;
}

export const DEFAULT_MAX_BUFFERED = 1_000;

const OPTION_KEYS: ReadonlySet<string> = new Set(['maxBuffered', 'sink', 'onSinkError']);
const CONTEXT_KEYS = ['tenant', 'agentId', 'runId', 'threadId', 'resourceId', 'entryPath', 'traceparent'] as const;
const BOUNDARIES: ReadonlySet<string> = new Set(BoundarySchema.options);
const DECISIONS: ReadonlySet<string> = new Set(DecisionOutcomeSchema.options);
const PRINCIPAL_KINDS: ReadonlySet<string> = new Set(PrincipalKindSchema.options);

// Messages name the field and the expectation, never the value: a gate may pass content by mistake.
function requireString(value: unknown, field: string, options: { nonEmpty?: boolean } = {}): string {
  if (typeof value !== 'string' || (options.nonEmpty === true && value.length === 0)) {
    throw new TypeError(`audit event field "${field}" must be a ${options.nonEmpty === true ? 'non-empty ' : ''}string`);
  }
  return value;
}

function optionalString(value: unknown, field: string): string | undefined {
  return value === undefined ? undefined : requireString(value, field);
}

function copyActor(value: unknown): Actor | undefined {
  if (value === undefined) return undefined;
  if (typeof value !== 'object' || value === null) throw new TypeError('audit event field "actor" must be an object');
  const actor = value as Record<string, unknown>;
  const kind = actor['kind'];
  if (typeof kind !== 'string' || !PRINCIPAL_KINDS.has(kind)) throw new TypeError('audit event field "actor.kind" must be a principal kind');
  return Object.freeze({
    id: requireString(actor['id'], 'actor.id', { nonEmpty: true }),
    role: requireString(actor['role'], 'actor.role', { nonEmpty: true }),
    kind: kind as Actor['kind'],
  });
}

function copyContext(value: unknown): AuditContext {
  if (typeof value !== 'object' || value === null) throw new TypeError('audit event field "context" must be an object');
  const source = value as Record<string, unknown>;
  const context: Record<string, string> = {};
  // Only the known correlation fields: anything else a caller attached stays off the record.
  for (const key of CONTEXT_KEYS) {
    const field = optionalString(source[key], `context.${key}`);
    if (field !== undefined) context[key] = field;
  }
  return Object.freeze(context);
}

function copyPolicy(value: unknown): AuditEvent['policy'] {
  if (value === undefined) return undefined;
  if (typeof value !== 'object' || value === null) throw new TypeError('audit event field "policy" must be an object');
  const source = value as Record<string, unknown>;
  const phase = optionalString(source['phase'], 'policy.phase');
  const channel = optionalString(source['channel'], 'policy.channel');
  return Object.freeze({
    name: requireString(source['name'], 'policy.name', { nonEmpty: true }),
    ...(phase === undefined ? {} : { phase }),
    ...(channel === undefined ? {} : { channel }),
  });
}

function copyDetections(value: unknown): readonly string[] | undefined {
  if (value === undefined) return undefined;
  if (!Array.isArray(value)) throw new TypeError('audit event field "detections" must be an array of strings');
  return Object.freeze(value.map((item, index) => requireString(item, `detections[${index}]`)));
}

function copyDetail(value: unknown): AuditEvent['detail'] {
  if (value === undefined) return undefined;
  if (typeof value !== 'object' || value === null || Array.isArray(value)) throw new TypeError('audit event field "detail" must be an object');
  const detail: Record<string, string | number | boolean> = {};
  for (const [key, item] of Object.entries(value)) {
    if (typeof item !== 'string' && typeof item !== 'number' && typeof item !== 'boolean') {
      throw new TypeError(`audit event field "detail.${key}" must be a string, number or boolean`);
    }
    detail[key] = item;
  }
  return Object.freeze(detail);
}

/** A deep, frozen copy of the known fields of `input`, with a fresh id and timestamp. */
function buildEvent(input: AuditInput): AuditEvent {
  if (typeof input !== 'object' || input === null) throw new TypeError('audit event must be an object');
  const boundary: unknown = input.boundary;
  const decision: unknown = input.decision;
  if (typeof boundary !== 'string' || !BOUNDARIES.has(boundary)) throw new TypeError('audit event field "boundary" must be an audit boundary');
  if (typeof decision !== 'string' || !DECISIONS.has(decision)) throw new TypeError('audit event field "decision" must be a decision outcome');
  const actor = copyActor(input.actor);
  const policy = copyPolicy(input.policy);
  const detections = copyDetections(input.detections);
  const detail = copyDetail(input.detail);
  return Object.freeze({
    id: randomUUID(),
    timestamp: new Date().toISOString(),
    boundary: input.boundary,
    action: requireString(input.action, 'action'),
    resource: requireString(input.resource, 'resource'),
    decision: input.decision,
    code: requireString(input.code, 'code', { nonEmpty: true }),
    reason: requireString(input.reason, 'reason'),
    context: copyContext(input.context),
    ...(actor === undefined ? {} : { actor }),
    ...(policy === undefined ? {} : { policy }),
    ...(detections === undefined ? {} : { detections }),
    ...(detail === undefined ? {} : { detail }),
  });
}

/**
 * Records every decision of a gate: in a bounded in-memory ring buffer and in an
 * optional sink. A best-effort sink's failure (thrown or rejected) goes to `onSinkError`
 * and never aborts the guarded operation; a `required` sink's failure makes `record`
 * reject with `AUDIT.REQUIRED_SINK_FAILED`, so the gate can fail closed.
 *
 * `record` awaits the sink's `write`: a slow sink slows the gate, so a remote sink
 * should buffer (as `kafkaAuditSink` does in best-effort mode).
 */
export class AuditLogger {
  readonly maxBuffered: number;
  private readonly sink: AuditSink | undefined;
  private readonly onSinkError: AuditSinkErrorHandler | undefined;
  private readonly buffer: AuditEvent[] = [];
  /** Index of the oldest event once the buffer is full. */
  private start = 0;
  private evictedCount = 0;
  private sinkFailureCount = 0;

  constructor(options: AuditLoggerOptions = {}) {
    if (typeof options !== 'object' || options === null) throw new TypeError('AuditLogger options must be an object');
    for (const key of Object.keys(options)) {
      if (!OPTION_KEYS.has(key)) throw new TypeError(`unknown AuditLogger option "${key}"`);
    }
    const { maxBuffered = DEFAULT_MAX_BUFFERED, sink, onSinkError } = options;
    if (!Number.isSafeInteger(maxBuffered) || maxBuffered < 1) throw new TypeError('AuditLogger maxBuffered must be a positive integer');
    if (onSinkError !== undefined && typeof onSinkError !== 'function') throw new TypeError('AuditLogger onSinkError must be a function');
    this.maxBuffered = maxBuffered;
    this.sink = sink === undefined ? undefined : toAuditSink(sink, 'AuditLogger sink');
    this.onSinkError = onSinkError;
  }

  /** Events pushed out of the ring buffer so far. */
  get evicted(): number {
    return this.evictedCount;
  }

  /** Sink failures so far, required or not. */
  get sinkFailures(): number {
    return this.sinkFailureCount;
  }

  /** True when events also leave the process through a sink (an export), not only into memory. */
  hasExternalSink(): boolean {
    return this.sink !== undefined;
  }

  /** True when the sink is required: a failed write rejects `record`. */
  get required(): boolean {
    return this.sink?.required === true;
  }

  /**
   * Records one decision and resolves with the frozen event. Rejects with TypeError for a
   * malformed input (nothing is recorded) and with `AUDIT.REQUIRED_SINK_FAILED` when a
   * required sink could not take it (the event stays in memory).
   */
  async record(input: AuditInput): Promise<AuditEvent> {
    const event = buildEvent(input);
    this.remember(event);
    if (!this.sink) return event;
    const sink = this.sink;
    try {
      await settle(() => sink.write(event));
    } catch (error) {
      this.sinkFailureCount += 1;
      this.report(error, event);
      if (isRequiredFailure(sink, error)) throw requiredSinkFailed();
    }
    return event;
  }

  /** The buffered events, oldest first (a copy). */
  events(): readonly AuditEvent[] {
    return [...this.buffer.slice(this.start), ...this.buffer.slice(0, this.start)];
  }

  /** Asks the sink to deliver what it buffers; rejects as the sink's `flush` does. */
  async flush(): Promise<void> {
    await this.sink?.flush?.();
  }

  /** Closes the sink (which flushes first, when it buffers). */
  async close(): Promise<void> {
    await this.sink?.close?.();
  }

  private remember(event: AuditEvent): void {
    if (this.buffer.length < this.maxBuffered) {
      this.buffer.push(event);
      return;
    }
    this.buffer[this.start] = event;
    this.start = (this.start + 1) % this.maxBuffered;
    this.evictedCount += 1;
  }

  private report(error: unknown, event: AuditEvent): void {
    const handler = this.onSinkError;
    if (!handler) return;
    try {
      const result: unknown = handler(error, event);
      // An async handler's rejection must not surface as an unhandled rejection either.
      if (result instanceof Promise) result.catch(() => undefined);
    } catch {
      // A failing error handler must not turn a best-effort failure into an aborted operation.
    }
  }
}
