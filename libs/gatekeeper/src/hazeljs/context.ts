// HazelJS's ToolInvocationContext: what the host says about a call. Identity (agent, tenant,
// environment, run) is trusted host data and becomes the gatekeeper's `identity`; `input` is the
// tool arguments, untrusted, and is only ever `input`.
import { cloneJson, freezeJson, isJsonValue, type JsonValue } from '@gatehouse/contracts';
import { type GatekeeperContext } from '../gatekeeper.js';
import { GatekeeperError } from './errors.js';

export type ToolClassification = 'read' | 'write' | 'destructive';
export type ToolRiskLevel = 'low' | 'medium' | 'high' | 'critical';
export const TOOL_CLASSIFICATIONS: readonly ToolClassification[] = Object.freeze(['read', 'write', 'destructive']);
export const TOOL_RISK_LEVELS: readonly ToolRiskLevel[] = Object.freeze(['low', 'medium', 'high', 'critical']);

/** HazelJS's invocation envelope. Identity comes from trusted runtime context only, never from `input`. */
export interface ToolInvocationContext<TInput = unknown> {
  readonly invocationId: string;
  readonly runId: string;
  readonly agentId: string;
  readonly agentVersion?: string;
  readonly tenantId?: string;
  readonly delegatedUserId?: string;
  readonly sessionId?: string;
  readonly toolName: string;
  readonly input: TInput;
  readonly purpose?: string;
  readonly environment: string;
  readonly timestamp: Date;
  readonly metadata?: Readonly<Record<string, unknown>>;
  readonly trace?: { readonly traceId?: string; readonly spanId?: string; readonly parentInvocationId?: string };
  readonly capabilities?: readonly string[];
  readonly roles?: readonly string[];
  readonly trustLevel?: string;
  /** The approval id a resumed call presents (HazelJS's resume token). */
  readonly approvalToken?: string;
  /** Names the call across retries: the approval binds it (falls back to `invocationId`). */
  readonly idempotencyKey?: string;
}

const REQUIRED = ['invocationId', 'runId', 'agentId', 'toolName', 'environment'] as const;
const OPTIONAL_STRINGS = ['agentVersion', 'tenantId', 'delegatedUserId', 'sessionId', 'purpose', 'trustLevel', 'approvalToken', 'idempotencyKey'] as const;
const KNOWN: ReadonlySet<string> = new Set([...REQUIRED, ...OPTIONAL_STRINGS, 'input', 'timestamp', 'metadata', 'trace', 'capabilities', 'roles']);
// The identity fields the gatekeeper judges (type-checked there: a non-string is GATEKEEPER.CALL_INVALID in every mode).
const IDENTITY_FIELDS: ReadonlySet<string> = new Set(['agentId', 'tenantId', 'environment', 'runId']);

const invalid = (field: string, problem: string): GatekeeperError =>
  new GatekeeperError('HAZELJS.VALIDATION', `invocation context field "${field}" ${problem}`, { field });

const isStringList = (value: unknown): boolean => Array.isArray(value) && value.every((item) => typeof item === 'string');

/**
 * A checked, frozen copy of a host's context: every key known, the required ones present, `input`
 * JSON (copied, so a rule or the tool cannot change what was judged). Throws HAZELJS.VALIDATION
 * naming the field, never its value. Identity values are checked by the gatekeeper itself.
 */
export function readInvocationContext(value: unknown): ToolInvocationContext<JsonValue> {
  if (value === null || typeof value !== 'object' || Array.isArray(value)) throw invalid('(root)', 'must be an object');
  const source = value as Record<string, unknown>;
  for (const key of Object.keys(source)) if (!KNOWN.has(key)) throw invalid(key, 'is not a ToolInvocationContext field');
  for (const key of REQUIRED) if (source[key] === undefined || source[key] === '') throw invalid(key, 'is required');
  for (const key of [...REQUIRED, ...OPTIONAL_STRINGS]) {
    if (!IDENTITY_FIELDS.has(key) && source[key] !== undefined && typeof source[key] !== 'string') throw invalid(key, 'must be a string');
  }
  const timestamp = source['timestamp'];
  if (!(timestamp instanceof Date) || Number.isNaN(timestamp.getTime())) throw invalid('timestamp', 'must be a valid Date');
  if (!('input' in source) || !isJsonValue(source['input'])) throw invalid('input', 'must be JSON (plain objects, arrays, finite numbers)');
  for (const key of ['capabilities', 'roles'] as const) if (source[key] !== undefined && !isStringList(source[key])) throw invalid(key, 'must be a list of strings');
  for (const key of ['metadata', 'trace'] as const) {
    if (source[key] !== undefined && (source[key] === null || typeof source[key] !== 'object' || Array.isArray(source[key]))) throw invalid(key, 'must be an object');
  }
  return Object.freeze({
    ...source,
    input: freezeJson(cloneJson(source['input'] as JsonValue)),
    timestamp: new Date(timestamp.getTime()),
  }) as unknown as ToolInvocationContext<JsonValue>;
}

/**
 * The gatekeeper's view of a call: identity from the trusted context, the tool name, the input.
 * Values are passed as the host gave them, so the gatekeeper's own structural check judges them.
 */
export function gatekeeperContextOf(context: ToolInvocationContext<JsonValue>): GatekeeperContext {
  const c = context as unknown as Record<string, unknown>;
  const identity: Record<string, unknown> = {};
  if (c['agentId'] !== undefined) identity['agent'] = c['agentId'];
  if (c['tenantId'] !== undefined) identity['tenant'] = c['tenantId'];
  if (c['environment'] !== undefined) identity['environment'] = c['environment'];
  if (c['runId'] !== undefined) identity['runId'] = c['runId'];
  return { identity: identity as GatekeeperContext['identity'], call: { tool: context.toolName }, input: context.input };
}

/** The correlation an audit record carries (trusted strings only). */
export function auditCorrelation(context: ToolInvocationContext<JsonValue>): { tenant?: string; agentId?: string; runId?: string } {
  const pick = (v: unknown) => (typeof v === 'string' && v.length > 0 ? v : undefined);
  const tenant = pick(context.tenantId);
  const agentId = pick(context.agentId);
  const runId = pick(context.runId);
  return { ...(tenant === undefined ? {} : { tenant }), ...(agentId === undefined ? {} : { agentId }), ...(runId === undefined ? {} : { runId }) };
}

/**
 * The gatekeeper's view of a saved HazelJS invocation (JSON, `timestamp` as text or absent), for
 * `gatehouse policy explain --invocation`. Throws HAZELJS.VALIDATION naming the field.
 */
export function gatekeeperContextOfInvocation(value: unknown): GatekeeperContext {
  if (value === null || typeof value !== 'object' || Array.isArray(value)) throw invalid('(root)', 'must be an object');
  const raw = value as Record<string, unknown>;
  const timestamp = raw['timestamp'] === undefined ? new Date() : new Date(String(raw['timestamp']));
  return gatekeeperContextOf(readInvocationContext({ ...raw, timestamp }));
}
