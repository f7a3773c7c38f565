import { AUDIT_EVENT_LIMITS, createEvent, type DecisionRecorded, DecisionRecordedV1, decisionTooLarge, GatehouseError } from '@gatehouse/contracts';
import { type AuditEvent } from './types.js';

/** Where the mapped event comes from and which tenant owns events without one. */
export interface ToDecisionEventOptions {
  /** The producer, `guard:<instance>` or `service:<name>`. */
  readonly source: string;
  /** Tenant of events whose context names none. */
  readonly defaultTenant: string;
}

/** Longest `reason` the contract takes. */
export const MAX_REASON_LENGTH = 512;
/** Longest string attribute value the contract takes. */
export const MAX_ATTRIBUTE_LENGTH = 256;

/** Subject of events that belong to no run or thread. */
export const UNSCOPED_SUBJECT = 'unscoped';

type Attributes = Record<string, string | number | boolean>;

/** Cuts `text` to `max` characters, marking the cut, without splitting a surrogate pair. */
function truncate(text: string, max: number): string {
  if (text.length <= max) return text;
  let end = max - 1;
  const last = text.charCodeAt(end - 1);
  if (last >= 0xd800 && last <= 0xdbff) end -= 1;
  return `${text.slice(0, end)}…`;
}

function attributeValue(value: string | number | boolean): string | number | boolean {
  if (typeof value === 'string') return truncate(value, MAX_ATTRIBUTE_LENGTH);
  // JSON has no Infinity or NaN; keep the fact rather than fail the whole decision.
  if (typeof value === 'number' && !Number.isFinite(value)) return String(value);
  return value;
}

function attributesOf(event: AuditEvent): Attributes {
  const attributes: Attributes = {};
  for (const [key, value] of Object.entries(event.detail ?? {})) attributes[key] = attributeValue(value);
  // Fields set by the gate itself come last, so free-form detail cannot impersonate them.
  attributes['action'] = attributeValue(event.action);
  attributes['resource'] = attributeValue(event.resource);
  if (event.context.resourceId !== undefined) attributes['resourceId'] = attributeValue(event.context.resourceId);
  if (event.policy) {
    attributes['policy.name'] = attributeValue(event.policy.name);
    if (event.policy.phase !== undefined) attributes['policy.phase'] = attributeValue(event.policy.phase);
    if (event.policy.channel !== undefined) attributes['policy.channel'] = attributeValue(event.policy.channel);
  }
  return attributes;
}

/** Resources that name a tool: a connector's gate (`connector:<id>`), a guardrail on a tool call (`tool:<id>`). */
const TOOL_RESOURCE = /^(?:connector|tool):(.+)$/;

/** The tool a decision was about, so SIEM queries can filter by tool. */
function toolIdOf(event: AuditEvent): string | undefined {
  return TOOL_RESOURCE.exec(event.resource)?.[1];
}

// `gatekeeper.bundle:<policySetId>@<revision>`, the detection a gatekeeper decision carries.
const BUNDLE_DETECTION = /^gatekeeper\.bundle:(.+)@(\d+)$/;

/**
 * The policy bundle a gatekeeper decision was made under, from its detections, as the contract's
 * `policy` reference (the field a SIEM reads a decision's policy version from). None for a
 * bundle without a revision (a local file) and for every other decision.
 */
export function bundleRefOf(event: AuditEvent): { bundleId: string; revision: number } | undefined {
  for (const detection of event.detections ?? []) {
    const match = BUNDLE_DETECTION.exec(detection);
    const revision = Number(match?.[2]);
    if (match && Number.isSafeInteger(revision)) return { bundleId: match[1]!, revision };
  }
  return undefined;
}

function durationMsOf(event: AuditEvent): number | undefined {
  const seconds = event.detail?.['durationSeconds'];
  return typeof seconds === 'number' && Number.isFinite(seconds) && seconds >= 0 ? seconds * 1000 : undefined;
}

/**
 * Maps an audit event to the `DecisionRecorded` event of record on `gatehouse.audit.v1`.
 * Pure: the envelope id and time are the audit event's own id and timestamp, so mapping
 * twice (a retry, a replay) yields the same event and consumers can de-duplicate on the id.
 * `reason` and string attributes are cut to the contract's bounds; anything else the
 * contract rejects (an empty tenant, a code over 128 characters) throws `ContractError`.
 */
export function toDecisionEvent(event: AuditEvent, options: ToDecisionEventOptions): DecisionRecorded {
  const record = decisionOf(event, options);
  // Every reader parks a record past the bounds unapplied: refused here, so the gate knows.
  if (decisionTooLarge(record)) throw new GatehouseError('AUDIT.EVENT_TOO_LARGE', `the decision record is past ${AUDIT_EVENT_LIMITS.eventBytes} bytes`, { category: 'validation' });
  return record;
}

function decisionOf(event: AuditEvent, options: ToDecisionEventOptions): DecisionRecorded {
  const { context } = event;
  const runId = context.runId;
  const durationMs = durationMsOf(event);
  return createEvent(
    DecisionRecordedV1,
    {
      id: event.id,
      time: event.timestamp,
      source: options.source,
      tenant: context.tenant ?? options.defaultTenant,
      subject: runId ?? context.threadId ?? UNSCOPED_SUBJECT,
      ...(runId === undefined ? {} : { correlationId: runId }),
      ...(context.traceparent === undefined ? {} : { trace: { traceparent: context.traceparent } }),
    },
    {
      decisionId: event.id,
      boundary: event.boundary,
      outcome: event.decision,
      code: event.code,
      reason: truncate(event.reason, MAX_REASON_LENGTH),
      ...(event.actor === undefined ? {} : { actor: { id: event.actor.id, role: event.actor.role, kind: event.actor.kind } }),
      ...(context.agentId === undefined ? {} : { agentId: context.agentId }),
      ...(runId === undefined ? {} : { runId }),
      ...(toolIdOf(event) === undefined ? {} : { toolId: toolIdOf(event) }),
      ...(context.threadId === undefined ? {} : { threadId: context.threadId }),
      ...(context.entryPath === undefined ? {} : { entryPath: context.entryPath }),
      ...(event.detections === undefined ? {} : { detections: [...event.detections] }),
      ...(bundleRefOf(event) === undefined ? {} : { policy: bundleRefOf(event) }),
      ...(durationMs === undefined ? {} : { durationMs }),
      attributes: attributesOf(event),
    },
  );
}
