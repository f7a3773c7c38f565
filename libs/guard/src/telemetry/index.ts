// The guard's OpenTelemetry spans and metrics (`@opentelemetry/api` only; no-ops without an SDK).
export { type Gate, gateOf, GUARD_METRIC, GUARD_TELEMETRY_SCOPE } from './guard-telemetry.js';
export { GUARD_SPAN } from './spans.js';
