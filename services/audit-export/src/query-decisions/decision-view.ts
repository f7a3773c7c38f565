import { type RecordVerification } from '../feeds/export-line.js';

/**
 * What the query API returns about a decision: the allowlist. Anything not named here —
 * `attributes`, `detections`, trace context, any field a later event version adds — is never
 * stored by the projection and never returned. `reason` is the static text chosen by code.
 */
export interface DecisionView {
  readonly id: string;
  readonly decisionId: string;
  readonly tenant: string;
  readonly subject: string;
  readonly source: string;
  readonly time: string;
  readonly logTime: string;
  readonly boundary: string;
  readonly outcome: string;
  readonly code: string;
  readonly reason: string;
  readonly actor: { readonly id: string; readonly role: string | null; readonly kind: string | null } | null;
  readonly agentId: string | null;
  readonly runId: string | null;
  readonly toolId: string | null;
  readonly policy: { readonly bundleId: string; readonly revision: number | null; readonly ruleId: string | null } | null;
  readonly correlationId: string | null;
  readonly causationId: string | null;
  readonly entryPath: string | null;
  readonly threadId: string | null;
  /** Paths that were redacted, never the values. */
  readonly redactedPaths: readonly string[];
  readonly durationMs: number | null;
  readonly chain: { readonly producer: string; readonly seq: number; readonly prevHash: string | null } | null;
  readonly position: { readonly partition: number; readonly offset: string };
  /**
   * Whether its source vouched for it: `verified` (a checkpoint signed by a key that may speak for
   * its source and tenant lists it), `unverified` (none does, yet), `forbidden` (only checkpoints
   * whose key may not claim it, or forged ones). With the reason, the key and the checkpoint.
   */
  readonly verification: RecordVerification;
}

/** The top-level keys of `DecisionView`, for tests that check nothing else leaks. */
export const DECISION_FIELDS = [
  'id',
  'decisionId',
  'tenant',
  'subject',
  'source',
  'time',
  'logTime',
  'boundary',
  'outcome',
  'code',
  'reason',
  'actor',
  'agentId',
  'runId',
  'toolId',
  'policy',
  'correlationId',
  'causationId',
  'entryPath',
  'threadId',
  'redactedPaths',
  'durationMs',
  'chain',
  'position',
  'verification',
] as const satisfies readonly (keyof DecisionView)[];

export interface DecisionDbRow {
  event_id: string;
  decision_id: string;
  tenant: string;
  subject: string;
  source: string;
  event_time: Date;
  log_time: Date;
  partition: number;
  offset: string;
  boundary: string;
  outcome: string;
  code: string;
  reason: string;
  actor_id: string | null;
  actor_role: string | null;
  actor_kind: string | null;
  agent_id: string | null;
  run_id: string | null;
  tool_id: string | null;
  policy_bundle: string | null;
  policy_revision: number | null;
  policy_rule: string | null;
  correlation_id: string | null;
  causation_id: string | null;
  entry_path: string | null;
  thread_id: string | null;
  redacted_paths: string[];
  duration_ms: number | null;
  chain_producer: string | null;
  chain_seq: number | null;
  chain_prev_hash: string | null;
  verification: RecordVerification['status'];
  verification_reason: string | null;
  verified_by: string | null;
  verification_checkpoint: string | null;
}

/** The explicit column list every read uses (never `SELECT *`). */
export const DECISION_COLUMNS = `event_id, decision_id, tenant, subject, source, event_time, log_time, partition, "offset", boundary, outcome, code, reason,
  actor_id, actor_role, actor_kind, agent_id, run_id, tool_id, policy_bundle, policy_revision, policy_rule, correlation_id, causation_id,
  entry_path, thread_id, redacted_paths, duration_ms, chain_producer, chain_seq, chain_prev_hash,
  verification, verification_reason, verified_by, verification_checkpoint`;

export function toView(row: DecisionDbRow): DecisionView {
  return {
    id: row.event_id,
    decisionId: row.decision_id,
    tenant: row.tenant,
    subject: row.subject,
    source: row.source,
    time: row.event_time.toISOString(),
    logTime: row.log_time.toISOString(),
    boundary: row.boundary,
    outcome: row.outcome,
    code: row.code,
    reason: row.reason,
    actor: row.actor_id === null ? null : { id: row.actor_id, role: row.actor_role, kind: row.actor_kind },
    agentId: row.agent_id,
    runId: row.run_id,
    toolId: row.tool_id,
    policy: row.policy_bundle === null ? null : { bundleId: row.policy_bundle, revision: row.policy_revision, ruleId: row.policy_rule },
    correlationId: row.correlation_id,
    causationId: row.causation_id,
    entryPath: row.entry_path,
    threadId: row.thread_id,
    redactedPaths: row.redacted_paths,
    durationMs: row.duration_ms,
    chain: row.chain_producer === null || row.chain_seq === null ? null : { producer: row.chain_producer, seq: row.chain_seq, prevHash: row.chain_prev_hash },
    position: { partition: row.partition, offset: String(row.offset) },
    verification: { status: row.verification, reason: row.verification_reason, keyId: row.verified_by, checkpoint: row.verification_checkpoint },
  };
}
