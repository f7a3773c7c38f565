// Audit: every gate records its decisions through an AuditLogger, into memory and a sink.
// `Actor` is the rbac area's name (a different, looser shape); the audit one is `AuditActor`.
export type { Actor as AuditActor, AuditBoundary, AuditContext, AuditEvent, AuditSink, DecisionOutcome, MetricsRecorder } from './types.js';
export { AuditLogger, type AuditInput, type AuditLoggerOptions, type AuditSinkErrorHandler, DEFAULT_MAX_BUFFERED } from './audit-logger.js';
export {
  AUDIT_DECISION_METRIC,
  AUDIT_DURATION_METRIC,
  type AuditSinkFunction,
  type AuditSinkLike,
  combineAuditSinks,
  metricsAuditSink,
  REQUIRED_SINK_FAILED,
  SINKS_FAILED,
} from './sinks.js';
export { MAX_ATTRIBUTE_LENGTH, MAX_REASON_LENGTH, toDecisionEvent, type ToDecisionEventOptions, UNSCOPED_SUBJECT } from './to-decision-event.js';
export {
  type AuditEventPublisher,
  EVENTS_DROPPED,
  EVENTS_DROPPED_REASON,
  KAFKA_UNAVAILABLE,
  type KafkaAuditMode,
  type KafkaAuditPublisher,
  kafkaAuditPublisher,
  type KafkaAuditSink,
  kafkaAuditSink,
  type KafkaAuditSinkOptions,
} from './kafka-sink.js';
