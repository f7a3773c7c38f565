import { type Actor, type DecisionOutcome } from '@gatehouse/contracts';

export type { Actor, DecisionOutcome };

/** Which gate wrote the event. */
export type AuditBoundary = 'agent-entry' | 'input' | 'output' | 'stream' | 'tool' | 'egress' | 'guardrail' | 'approval' | 'ledger' | 'policy';

/** Correlation from trusted host code (request context), never from a message or model output. */
export interface AuditContext {
  readonly tenant?: string;
  readonly agentId?: string;
  readonly runId?: string;
  readonly threadId?: string;
  readonly resourceId?: string;
  /** How the call entered (`generate`, `stream`, `http-start`, ...). */
  readonly entryPath?: string;
  /** W3C trace context of the request, carried in the event envelope to Kafka consumers. */
  readonly traceparent?: string;
}

/**
 * One decision of record. `reason` is static text chosen by code; `detections` name
 * what matched (detector or policy names), never the matched text.
 */
export interface AuditEvent {
  readonly id: string;
  /** ISO 8601, producer clock. */
  readonly timestamp: string;
  readonly boundary: AuditBoundary;
  /** What was attempted, e.g. `agent.generate`, `agent.stream`, `agent.output.policy`. */
  readonly action: string;
  /** What it was attempted on, e.g. `agent:support-bot`. */
  readonly resource: string;
  readonly decision: DecisionOutcome;
  /** Stable machine code, e.g. `AGENT.ROLE_NOT_ALLOWED`. */
  readonly code: string;
  readonly reason: string;
  readonly actor?: Actor;
  readonly context: AuditContext;
  /** Policy that decided, when one did. */
  readonly policy?: { readonly name: string; readonly phase?: string; readonly channel?: string };
  readonly detections?: readonly string[];
  /** Scalar facts (counts, durations); never inspected content. */
  readonly detail?: Readonly<Record<string, string | number | boolean>>;
}

/**
 * Receives every event. A sink marked `required` makes the gate fail closed when the
 * event cannot be written; otherwise its failures go to `onSinkError` and the guarded
 * operation continues.
 */
export interface AuditSink {
  write(event: AuditEvent): void | Promise<void>;
  readonly required?: boolean;
  /** Writes what is buffered; resolves when delivered (or rejects). */
  flush?(): Promise<void>;
  close?(): Promise<void>;
}

/** Counters and histograms, for `metricsAuditSink`. */
export interface MetricsRecorder {
  increment(name: string, labels: Readonly<Record<string, string>>): void;
  observe(name: string, value: number, labels: Readonly<Record<string, string>>): void;
}
