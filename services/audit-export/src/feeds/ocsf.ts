import { canonicalJson, type DecisionOutcome, type DecisionRecorded } from '@gatehouse/contracts';
import { type AuditRecord } from './export-line.js';

/** The OCSF schema version the shape follows. */
export const OCSF_VERSION = '1.3.0';

type Boundary = DecisionRecorded['payload']['boundary'];

interface OcsfClass {
  readonly categoryUid: number;
  readonly categoryName: string;
  readonly classUid: number;
  readonly className: string;
  readonly activityId: number;
  readonly activityName: string;
}

const AUTHORIZE_SESSION: OcsfClass = {
  categoryUid: 3,
  categoryName: 'Identity & Access Management',
  classUid: 3003,
  className: 'Authorize Session',
  activityId: 99,
  activityName: 'Other',
};

const API_ACTIVITY: OcsfClass = {
  categoryUid: 6,
  categoryName: 'Application Activity',
  classUid: 6003,
  className: 'API Activity',
  activityId: 99,
  activityName: 'Other',
};

/**
 * Who may call the agent and who may approve are authorizations of a principal (Authorize
 * Session); every other gate judges one operation the agent attempts (API Activity).
 */
export function ocsfClassOf(boundary: Boundary): OcsfClass {
  switch (boundary) {
    case 'agent-entry':
    case 'approval':
      return AUTHORIZE_SESSION;
    case 'input':
    case 'output':
    case 'stream':
    case 'tool':
    case 'egress':
    case 'guardrail':
    case 'ledger':
    case 'policy':
      return API_ACTIVITY;
    default: {
      const exhaustive: never = boundary;
      return exhaustive;
    }
  }
}

interface OutcomeMapping {
  readonly statusId: number;
  readonly status: string;
  readonly dispositionId: number;
  readonly disposition: string;
  readonly severityId: number;
  readonly severity: string;
  /** CEF severity, 0-10. */
  readonly cefSeverity: number;
  /** CEF `outcome`. */
  readonly cefOutcome: 'success' | 'failure' | 'pending';
}

/** Outcome → OCSF status/disposition/severity and CEF severity: denials and errors rank higher. */
export function outcomeMapping(outcome: DecisionOutcome): OutcomeMapping {
  switch (outcome) {
    case 'allowed':
      return { statusId: 1, status: 'Success', dispositionId: 1, disposition: 'Allowed', severityId: 1, severity: 'Informational', cefSeverity: 1, cefOutcome: 'success' };
    case 'observed':
      return { statusId: 1, status: 'Success', dispositionId: 17, disposition: 'Logged', severityId: 1, severity: 'Informational', cefSeverity: 1, cefOutcome: 'success' };
    case 'masked':
    case 'rewritten':
      return { statusId: 1, status: 'Success', dispositionId: 11, disposition: 'Corrected', severityId: 2, severity: 'Low', cefSeverity: 3, cefOutcome: 'success' };
    case 'approval-required':
      return { statusId: 99, status: 'Pending', dispositionId: 14, disposition: 'Delayed', severityId: 2, severity: 'Low', cefSeverity: 4, cefOutcome: 'pending' };
    case 'denied':
      return { statusId: 2, status: 'Failure', dispositionId: 2, disposition: 'Blocked', severityId: 3, severity: 'Medium', cefSeverity: 7, cefOutcome: 'failure' };
    case 'error':
      return { statusId: 2, status: 'Failure', dispositionId: 27, disposition: 'Error', severityId: 4, severity: 'High', cefSeverity: 8, cefOutcome: 'failure' };
    default: {
      const exhaustive: never = outcome;
      return exhaustive;
    }
  }
}

/** Drops undefined members so that absent fields are absent, not `null`. */
function defined<T extends Record<string, unknown>>(value: T): Partial<T> {
  return Object.fromEntries(Object.entries(value).filter(([, v]) => v !== undefined)) as Partial<T>;
}

/**
 * Maps a decision to an OCSF-shaped event. Deterministic: every field comes from the record
 * (envelope, payload, log position and append time), keys are serialized sorted, so a
 * re-export of the same record yields the same bytes. `attributes` never leave the service.
 */
export function toOcsf(record: AuditRecord): Record<string, unknown> {
  const { event } = record;
  const p = event.payload;
  const cls = ocsfClassOf(p.boundary);
  const out = outcomeMapping(p.outcome);
  const policy = p.policy
    ? defined({ uid: p.policy.bundleId, version: String(p.policy.revision), name: p.policy.ruleId ?? p.policy.bundleId })
    : undefined;
  return defined({
    category_uid: cls.categoryUid,
    category_name: cls.categoryName,
    class_uid: cls.classUid,
    class_name: cls.className,
    activity_id: cls.activityId,
    activity_name: cls.activityName,
    type_uid: cls.classUid * 100 + cls.activityId,
    type_name: `${cls.className}: ${cls.activityName}`,
    time: Date.parse(event.time),
    severity_id: out.severityId,
    severity: out.severity,
    status_id: out.statusId,
    status: out.status,
    status_code: p.code,
    status_detail: p.reason,
    disposition_id: out.dispositionId,
    disposition: out.disposition,
    duration: p.durationMs,
    message: `${p.boundary} ${p.outcome}: ${p.code}`,
    metadata: defined({
      uid: event.id,
      version: OCSF_VERSION,
      product: { name: 'gatehouse', vendor_name: 'gatehouse', feature: { name: p.boundary } },
      tenant_uid: event.tenant,
      correlation_uid: event.correlationId ?? p.runId ?? event.subject,
      original_time: event.time,
      logged_time: record.logTime.getTime(),
      log_name: record.topic,
      event_code: p.code,
      sequence: event.chain?.seq,
    }),
    actor: defined({
      user: p.actor ? { uid: p.actor.id, type: p.actor.kind, groups: [{ name: p.actor.role }] } : undefined,
      app_name: p.agentId,
      session: p.threadId ? { uid: p.threadId } : undefined,
      authorizations: [defined({ decision: p.outcome, policy })],
    }),
    api: cls.classUid === API_ACTIVITY.classUid ? defined({ operation: p.entryPath ?? p.boundary, service: p.toolId ? { name: p.toolId } : undefined }) : undefined,
    policy,
    unmapped: {
      gatehouse: defined({
        decision_id: p.decisionId,
        boundary: p.boundary,
        outcome: p.outcome,
        source: event.source,
        subject: event.subject,
        run_id: p.runId,
        tool_id: p.toolId,
        causation_id: event.causationId,
        traceparent: event.trace?.traceparent,
        entry_path: p.entryPath,
        redacted_paths: p.redactedPaths,
        detections: p.detections,
      }),
      chain: event.chain ? { producer: event.chain.producer, seq: event.chain.seq, prev_hash: event.chain.prevHash } : null,
      // Whether its source vouched for it (null: not judged, e.g. audit-export's own lines).
      verification: record.verification
        ? { status: record.verification.status, reason: record.verification.reason, key_id: record.verification.keyId, checkpoint_uid: record.verification.checkpoint }
        : null,
      kafka: { topic: record.topic, partition: record.partition, offset: record.offset },
    },
  });
}

/** One OCSF JSON line (no trailing newline). */
export function toOcsfLine(record: AuditRecord): string {
  return canonicalJson(toOcsf(record));
}
