import { canonicalJson, cloneJson, type JsonValue } from '@gatehouse/contracts';
import { readContextValue } from '../context.js';
import { sha256Hex } from './digest.js';
import { isJsonNative } from './stores/json-native.js';
import {
  CONNECTOR_EXECUTION_CONTEXT_KEY,
  CONNECTOR_GRANTS_CONTEXT_KEY,
  DRY_RUN_CONTEXT_KEY,
  IDEMPOTENCY_KEY_CONTEXT_KEY,
  ISOLATION_SCOPE_CONTEXT_KEY,
  PRINCIPAL_PERMISSIONS_CONTEXT_KEY,
  WORKFLOW_SCOPE_CONTEXT_KEY,
} from './context-keys.js';
import { type ConnectorApprovalGrant, type ConnectorApprovalSuspension, type ConnectorExecutionIdentity, type PrincipalPermissions } from './types.js';

/** A value from trusted context: absent, valid, or present but malformed (which fails closed). */
export type Trusted<T> = { readonly state: 'absent' } | { readonly state: 'valid'; readonly value: T } | { readonly state: 'invalid' };

const ABSENT = { state: 'absent' } as const;
const INVALID = { state: 'invalid' } as const;
const nonEmpty = (v: unknown, max = 512): v is string => typeof v === 'string' && v.length > 0 && v.length <= max;

function plainObject(v: unknown): v is Record<string, unknown> {
  if (v === null || typeof v !== 'object' || Array.isArray(v)) return false;
  const proto = Object.getPrototypeOf(v) as unknown;
  return proto === Object.prototype || proto === null;
}

function onlyKeys(v: Record<string, unknown>, allowed: readonly string[]): boolean {
  return Object.keys(v).every((k) => allowed.includes(k));
}

function parseSuspension(v: unknown): ConnectorApprovalSuspension | undefined {
  if (!plainObject(v) || !onlyKeys(v, ['stepPath', 'suspendedAt', 'resumeCount'])) return undefined;
  if (!nonEmpty(v['stepPath']) || !nonEmpty(v['suspendedAt']) || !Number.isSafeInteger(v['resumeCount']) || (v['resumeCount'] as number) < 0) return undefined;
  return Object.freeze({ stepPath: v['stepPath'], suspendedAt: v['suspendedAt'], resumeCount: v['resumeCount'] as number });
}

function parseGrant(v: unknown): ConnectorApprovalGrant | undefined {
  if (!plainObject(v)) return undefined;
  const base = ['scope', 'connectorId', 'runId', 'workflowId', 'approvalId', 'editedInput', 'tenant', 'argumentsHash'];
  if (!nonEmpty(v['connectorId']) || !nonEmpty(v['runId'])) return undefined;
  if (v['tenant'] !== undefined && !nonEmpty(v['tenant'], 256)) return undefined;
  if (v['argumentsHash'] !== undefined && (typeof v['argumentsHash'] !== 'string' || !/^[\da-f]{64}$/.test(v['argumentsHash']))) return undefined;
  if (v['approvalId'] !== undefined && !nonEmpty(v['approvalId'])) return undefined;
  if (v['editedInput'] !== undefined && !isJsonNative(v['editedInput'])) return undefined;
  const common = {
    connectorId: v['connectorId'],
    runId: v['runId'],
    ...(v['approvalId'] === undefined ? {} : { approvalId: v['approvalId'] as string }),
    ...(v['tenant'] === undefined ? {} : { tenant: v['tenant'] as string }),
    ...(v['argumentsHash'] === undefined ? {} : { argumentsHash: v['argumentsHash'] as string }),
    ...(v['editedInput'] === undefined ? {} : { editedInput: cloneJson(v['editedInput'] as JsonValue) }),
  };
  switch (v['scope']) {
    case 'run':
      if (!onlyKeys(v, base) || (v['workflowId'] !== undefined && !nonEmpty(v['workflowId']))) return undefined;
      return Object.freeze({ ...common, scope: 'run', ...(v['workflowId'] === undefined ? {} : { workflowId: v['workflowId'] as string }) });
    case 'suspension': {
      const suspension = parseSuspension(v['suspension']);
      if (!onlyKeys(v, [...base, 'suspension']) || !nonEmpty(v['workflowId']) || !suspension) return undefined;
      return Object.freeze({ ...common, scope: 'suspension', workflowId: v['workflowId'], suspension });
    }
    case 'tool-call': {
      const suspension = parseSuspension(v['suspension']);
      if (!onlyKeys(v, [...base, 'suspension', 'toolCallId']) || !nonEmpty(v['workflowId']) || !suspension || !nonEmpty(v['toolCallId'])) return undefined;
      return Object.freeze({ ...common, scope: 'tool-call', workflowId: v['workflowId'], suspension, toolCallId: v['toolCallId'] });
    }
    default:
      return undefined;
  }
}

/** Grants from trusted context. Legacy arrays of connector ids, or any malformed entry, are invalid. */
export function readGrants(requestContext: unknown): Trusted<readonly ConnectorApprovalGrant[]> {
  const raw = readContextValue(requestContext, CONNECTOR_GRANTS_CONTEXT_KEY);
  if (raw === undefined) return ABSENT;
  if (!Array.isArray(raw)) return INVALID;
  const grants = raw.map(parseGrant);
  if (grants.some((g) => g === undefined)) return INVALID;
  return { state: 'valid', value: Object.freeze(grants as ConnectorApprovalGrant[]) };
}

export function readIdentity(requestContext: unknown): Trusted<ConnectorExecutionIdentity> {
  const raw = readContextValue(requestContext, CONNECTOR_EXECUTION_CONTEXT_KEY);
  if (raw === undefined) return ABSENT;
  if (!plainObject(raw) || !onlyKeys(raw, ['workflowId', 'runId', 'suspension']) || !nonEmpty(raw['workflowId']) || !nonEmpty(raw['runId'])) return INVALID;
  const suspension = raw['suspension'] === undefined ? undefined : parseSuspension(raw['suspension']);
  if (raw['suspension'] !== undefined && !suspension) return INVALID;
  return { state: 'valid', value: Object.freeze({ workflowId: raw['workflowId'], runId: raw['runId'], ...(suspension ? { suspension } : {}) }) };
}

export function readPermissions(requestContext: unknown): Trusted<PrincipalPermissions> {
  const raw = readContextValue(requestContext, PRINCIPAL_PERMISSIONS_CONTEXT_KEY);
  if (raw === undefined || raw === null) return ABSENT;
  const parsed = parsePrincipalPermissions(raw);
  return parsed === undefined ? INVALID : { state: 'valid', value: parsed };
}

// A snapshot version is recorded with decisions: bounded, and no control characters in a log line.
// eslint-disable-next-line no-control-regex
const POLICY_VERSION = /^(?=.*\S)[^\u0000-\u001f\u007f]{1,200}$/;

function parsePrincipalPermissions(raw: unknown): PrincipalPermissions | undefined {
  if (!plainObject(raw) || !onlyKeys(raw, ['principalId', 'permissions', 'policyVersion']) || !nonEmpty(raw['principalId']) || !Array.isArray(raw['permissions'])) return undefined;
  const permissions = raw['permissions'] as unknown[];
  if (permissions.some((p) => !nonEmpty(p, 256))) return undefined;
  const version = raw['policyVersion'];
  if (version !== undefined && (typeof version !== 'string' || !POLICY_VERSION.test(version))) return undefined;
  return Object.freeze({ principalId: raw['principalId'], permissions: Object.freeze([...(permissions as string[])]), ...(version === undefined ? {} : { policyVersion: version }) });
}

/**
 * True for a principal-permissions projection the connector gate trusts (the same check it runs):
 * a plain object with a non-empty `principalId`, a `permissions` array of non-empty strings and an
 * optional `policyVersion`. Anything else in `PRINCIPAL_PERMISSIONS_CONTEXT_KEY` refuses the call.
 */
export function isPrincipalPermissions(value: unknown): value is PrincipalPermissions {
  return parsePrincipalPermissions(value) !== undefined;
}

export function readScalar(requestContext: unknown, key: typeof IDEMPOTENCY_KEY_CONTEXT_KEY | typeof ISOLATION_SCOPE_CONTEXT_KEY | typeof WORKFLOW_SCOPE_CONTEXT_KEY): Trusted<string> {
  const raw = readContextValue(requestContext, key);
  if (raw === undefined) return ABSENT;
  return nonEmpty(raw) ? { state: 'valid', value: raw } : INVALID;
}

/** Dry run is requested only by the literal `true`; anything else present is malformed. */
export function readDryRun(requestContext: unknown): Trusted<true> {
  const raw = readContextValue(requestContext, DRY_RUN_CONTEXT_KEY);
  if (raw === undefined || raw === false) return ABSENT;
  return raw === true ? { state: 'valid', value: true } : INVALID;
}

/** Whether `grant` authorizes this call. */
export function grantMatches(
  grant: ConnectorApprovalGrant,
  call: { connectorId: string; identity: ConnectorExecutionIdentity | undefined; toolCallId: string | undefined },
): boolean {
  if (grant.connectorId !== call.connectorId || !call.identity || grant.runId !== call.identity.runId) return false;
  if (grant.scope === 'run') return grant.workflowId === undefined || grant.workflowId === call.identity.workflowId;
  if (grant.workflowId !== call.identity.workflowId) return false;
  const s = call.identity.suspension;
  if (!s || s.stepPath !== grant.suspension.stepPath || s.suspendedAt !== grant.suspension.suspendedAt || s.resumeCount !== grant.suspension.resumeCount) return false;
  return grant.scope === 'suspension' || (call.toolCallId !== undefined && grant.toolCallId === call.toolCallId);
}

/** The arguments hash a bound context grant names: hex sha-256 of the arguments' canonical JSON. */
export function argumentsHashOf(input: JsonValue): string {
  return sha256Hex(canonicalJson(input));
}

/**
 * `grant` bound to one call's tenant and arguments: what trusted host code puts in
 * `CONNECTOR_GRANTS_CONTEXT_KEY` for a `contextGrants: 'bound'` connector (the default). The
 * arguments are the call's as the model proposed them (before a reviewer's `editedInput`).
 */
export function bindGrant<G extends ConnectorApprovalGrant>(grant: G, call: { readonly tenant: string; readonly input: JsonValue }): G & { tenant: string; argumentsHash: string } {
  return { ...grant, tenant: call.tenant, argumentsHash: argumentsHashOf(call.input) };
}
