import { GatehouseError, isGatehouseError } from '@gatehouse/contracts';
import { type AuditEvent, type AuditSink, type MetricsRecorder } from './types.js';

/** A sink given as a bare function: always best-effort. */
export type AuditSinkFunction = (event: AuditEvent) => void | Promise<void>;

/** What `AuditLogger` and `combineAuditSinks` accept as a sink. */
export type AuditSinkLike = AuditSink | AuditSinkFunction;

/** A required sink could not take the event: the gate must fail closed. */
export const REQUIRED_SINK_FAILED = 'AUDIT.REQUIRED_SINK_FAILED';
/** Only best-effort parts of a combined sink failed: the gate goes on. */
export const SINKS_FAILED = 'AUDIT.SINKS_FAILED';

/** Counter of decisions, labelled `boundary`, `decision`, `code`. */
export const AUDIT_DECISION_METRIC = 'gatehouse.audit.decision';
/** Histogram of `detail.durationSeconds`, with the same labels. */
export const AUDIT_DURATION_METRIC = 'gatehouse.audit.duration_seconds';

/**
 * The error a gate sees when a required sink fails. It never carries the underlying
 * error (not as message, details or cause): that error may quote arbitrary text, and
 * goes only to the host's `onSinkError`.
 */
export function requiredSinkFailed(details: Record<string, number> = {}): GatehouseError {
  return new GatehouseError(REQUIRED_SINK_FAILED, 'a required audit sink could not record the event', {
    category: 'unavailable',
    retryable: true,
    details,
  });
}

/**
 * True when a failure of `sink` must fail the gate closed: the sink is required, and it
 * did not report that only its best-effort parts failed (`AUDIT.SINKS_FAILED`).
 */
export function isRequiredFailure(sink: AuditSink, error: unknown): boolean {
  return sink.required === true && !(isGatehouseError(error) && error.code === SINKS_FAILED);
}

/** Checks a sink given by the host and returns it as an `AuditSink`. Throws TypeError. */
export function toAuditSink(sink: unknown, what = 'sink'): AuditSink {
  if (typeof sink === 'function') {
    const write = sink as AuditSinkFunction;
    return { write: (event) => write(event), required: false };
  }
  if (typeof sink !== 'object' || sink === null || typeof (sink as { write?: unknown }).write !== 'function') {
    throw new TypeError(`${what} must be a function or an object with a write() method`);
  }
  const candidate = sink as { required?: unknown; flush?: unknown; close?: unknown };
  if (candidate.required !== undefined && typeof candidate.required !== 'boolean') throw new TypeError(`${what}.required must be a boolean`);
  if (candidate.flush !== undefined && typeof candidate.flush !== 'function') throw new TypeError(`${what}.flush must be a function`);
  if (candidate.close !== undefined && typeof candidate.close !== 'function') throw new TypeError(`${what}.close must be a function`);
  return sink as AuditSink;
}

/** Runs `work`, turning a synchronous throw into a rejection. */
export async function settle(work: () => void | Promise<void>): Promise<void> {
  await work();
}

type Operation = 'write' | 'flush' | 'close';

/** Runs `operation` on every part, then throws one aggregate error if any part failed. */
async function fanOut(parts: readonly AuditSink[], operation: Operation, event?: AuditEvent): Promise<void> {
  const results = await Promise.allSettled(
    parts.map((part) =>
      settle(() => {
        if (operation === 'write') return part.write(event as AuditEvent);
        return operation === 'flush' ? part.flush?.() : part.close?.();
      }),
    ),
  );
  const failures: { part: AuditSink; error: unknown }[] = [];
  results.forEach((result, index) => {
    const part = parts[index];
    if (result.status === 'rejected' && part) failures.push({ part, error: result.reason });
  });
  if (failures.length === 0) return;
  const requiredFailed = failures.filter((f) => isRequiredFailure(f.part, f.error)).length;
  // The underlying errors stay reachable for the host's onSinkError (error.cause), never
  // in the message or details, which gates and logs may show.
  const cause = new AggregateError(
    failures.map((f) => f.error),
    `${failures.length} audit sink(s) failed`,
  );
  if (requiredFailed > 0) {
    throw new GatehouseError(REQUIRED_SINK_FAILED, 'a required audit sink could not record the event', {
      category: 'unavailable',
      retryable: true,
      details: { failed: failures.length, requiredFailed },
      cause,
    });
  }
  throw new GatehouseError(SINKS_FAILED, `${failures.length} best-effort audit sink(s) failed`, {
    category: 'unavailable',
    retryable: true,
    details: { failed: failures.length },
    cause,
  });
}

/**
 * One sink over many. Every part receives every event (in parallel), even when another
 * fails. The result is `required` when any part is; a failure of a required part throws
 * `AUDIT.REQUIRED_SINK_FAILED`, failures of best-effort parts only `AUDIT.SINKS_FAILED`
 * (details `{ failed }`), which `AuditLogger` treats as best-effort. The underlying errors
 * are the aggregate's `cause` (an `AggregateError`). `flush` and `close` fan out alike.
 */
export function combineAuditSinks(...sinks: AuditSinkLike[]): AuditSink {
  if (sinks.length === 0) throw new TypeError('combineAuditSinks needs at least one sink');
  const parts = sinks.map((sink, index) => toAuditSink(sink, `sinks[${index}]`));
  const required = parts.some((part) => part.required === true);
  return {
    required,
    write: (event) => fanOut(parts, 'write', event),
    flush: () => fanOut(parts, 'flush'),
    close: () => fanOut(parts, 'close'),
  };
}

/**
 * Counts every decision (`gatehouse.audit.decision`, labels boundary, decision, code) and
 * observes `gatehouse.audit.duration_seconds` when `detail.durationSeconds` is a finite,
 * non-negative number. Labels are stable codes and enums only: no content, bounded cardinality.
 */
export function metricsAuditSink(recorder: MetricsRecorder): AuditSink {
  const candidate = recorder as Partial<MetricsRecorder> | null | undefined;
  if (typeof candidate !== 'object' || candidate === null || typeof candidate.increment !== 'function' || typeof candidate.observe !== 'function') {
    throw new TypeError('metricsAuditSink needs a recorder with increment() and observe() methods');
  }
  return {
    required: false,
    write: (event) => {
      const labels = { boundary: event.boundary, decision: event.decision, code: event.code };
      recorder.increment(AUDIT_DECISION_METRIC, labels);
      const seconds = event.detail?.['durationSeconds'];
      if (typeof seconds === 'number' && Number.isFinite(seconds) && seconds >= 0) {
        recorder.observe(AUDIT_DURATION_METRIC, seconds, labels);
      }
    },
  };
}
