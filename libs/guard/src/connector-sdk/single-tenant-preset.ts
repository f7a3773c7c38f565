// singleTenantConnectorPolicies: the connector-policy baseline of one physically isolated deployment
// serving one organization (breakwater's preset, over gatehouse's own stores and audit export).
// Built once and passed as `policies` to every connector; `createConnector` applies what depends
// on a connector's manifest (a durable store for a declared idempotency key or rate limit, the
// principal-permission wiring for required permissions) and refuses a preset changed after it was
// built. Everything it refuses is a typed error naming what is wrong or missing.
import { GatehouseError, readOptions } from '@gatehouse/contracts';
import { AuditLogger } from '../audit/audit-logger.js';
import { validateEgressPatterns } from './egress/index.js';
import { isDurableStore } from './stores/ledger-client.js';
import { isTenantIsolationEvaluator } from './tool-policies.js';
import { type ConnectorPolicies, type IdempotencyStore, type PermissionManifest, type RateLimitStore, type ToolPolicyEvaluator } from './types.js';

/** Durable stores (from `createLedgerStores`) for connectors that declare idempotency keys or rate limits. */
export interface SingleTenantDurableStores {
  readonly idempotency?: IdempotencyStore;
  readonly rateLimit?: RateLimitStore;
}

/** The audit export every connector decision goes to, or the explicit development opt-out. */
export type SingleTenantAuditPosture =
  | { readonly mode: 'production'; readonly logger: AuditLogger }
  | { readonly mode: 'development'; readonly allowUnaudited: true };

/** Whether trusted host code sets `PRINCIPAL_PERMISSIONS_CONTEXT_KEY` on every call. */
export interface SingleTenantPermissionPosture {
  readonly principalPermissions: 'configured' | 'not-configured';
}

export interface SingleTenantConnectorPoliciesOptions {
  /** Required where a connector declares `idempotencyKey` or `rateLimit`. */
  readonly durableStores?: SingleTenantDurableStores;
  /** Required: a logger with an external sink (the Kafka audit export), or `{ mode: 'development', allowUnaudited: true }`. */
  readonly audit: SingleTenantAuditPosture;
  /** Required: the organization allowlist every declared egress host must fall within. */
  readonly egress: { readonly allowedDomains: readonly string[] };
  /** Required: the principal-permission wiring; `requiredPermissions` needs `configured`. */
  readonly permissions: SingleTenantPermissionPosture;
  /** More tool policy evaluators (`tenantIsolation()` is refused: one deployment is one tenant). */
  readonly evaluators?: readonly ToolPolicyEvaluator[];
  /** Transport behind `runtime.fetch`. */
  readonly fetch?: typeof fetch;
  /** Refuse connectors whose egress is `declaration-only`. */
  readonly requireEgressEnforcement?: true;
}

const PRESET = Symbol('gatehouse.singleTenantConnectorPolicies');

/** The frozen policy set `singleTenantConnectorPolicies` returns; pass it as a connector's `policies`. */
export type SingleTenantConnectorPolicies = Readonly<ConnectorPolicies> & { readonly [PRESET]: unknown };

/** Why the preset, or a connector built with it, was refused. */
export type SingleTenantPresetErrorCode = 'CONNECTOR.PRESET_INVALID' | 'CONNECTOR.PRESET_INCOMPLETE' | 'CONNECTOR.PRESET_TAMPERED';

/** A refused preset option or connector: `field` names the option that is wrong or missing, never its value. */
export class SingleTenantPresetError extends GatehouseError {
  declare readonly code: SingleTenantPresetErrorCode;
  readonly field: string;

  constructor(code: SingleTenantPresetErrorCode, field: string, message: string, connectorId?: string) {
    super(code, message, { category: 'validation', retryable: false, details: { field, ...(connectorId === undefined ? {} : { connectorId }) } });
    this.name = 'SingleTenantPresetError';
    this.field = field;
  }
}

interface PresetMetadata {
  readonly baseline: Readonly<ConnectorPolicies>;
  readonly idempotencyStore: IdempotencyStore | undefined;
  readonly rateLimitStore: RateLimitStore | undefined;
  readonly audit: AuditLogger | undefined;
  readonly principalPermissions: SingleTenantPermissionPosture['principalPermissions'];
  readonly requireEgressEnforcement: boolean;
}

// Metadata this module issued: a forged symbol value on a copy is refused.
const issued = new WeakSet<object>();
const OPTIONS = ['durableStores', 'audit', 'egress', 'permissions', 'evaluators', 'fetch', 'requireEgressEnforcement'];
const POLICY_MEMBERS = ['networkEgress', 'evaluators', 'destructiveRequiresApproval', 'fetch'] as const;

const WHERE = 'singleTenantConnectorPolicies';
const invalid = (field: string, message: string): SingleTenantPresetError => new SingleTenantPresetError('CONNECTOR.PRESET_INVALID', field, `${WHERE}: ${message}`);
const missing = (field: string, message: string): SingleTenantPresetError => new SingleTenantPresetError('CONNECTOR.PRESET_INCOMPLETE', field, `${WHERE}: ${message}`);
const isObject = (value: unknown): value is Record<string, unknown> => value !== null && typeof value === 'object' && !Array.isArray(value);

/** readOptions, its TypeError (which names an unknown key) turned into the preset's typed error. */
function readBag(value: unknown, known: readonly string[], field: string) {
  try {
    return readOptions(field === 'options' ? WHERE : `${WHERE}: ${field}`, value, known);
  } catch (error) {
    throw new SingleTenantPresetError('CONNECTOR.PRESET_INVALID', field, (error as Error).message);
  }
}

function readAudit(value: unknown): AuditLogger | undefined {
  if (value === undefined) throw missing('audit', 'audit is required: { mode: "production", logger } with an external sink, or { mode: "development", allowUnaudited: true }');
  const audit = readBag(value, ['mode', 'logger', 'allowUnaudited'], 'audit');
  if (audit['mode'] === 'development') {
    if (audit['allowUnaudited'] !== true || audit['logger'] !== undefined) throw invalid('audit.allowUnaudited', 'development mode needs exactly allowUnaudited: true');
    return undefined;
  }
  if (audit['mode'] !== 'production' || audit['allowUnaudited'] !== undefined) throw invalid('audit.mode', 'audit.mode must be "production" or "development"');
  const logger = audit['logger'];
  if (!(logger instanceof AuditLogger)) throw missing('audit.logger', 'production audit needs an AuditLogger');
  // An in-memory ring buffer is no audit trail for a deployment: the events must leave the process.
  if (!logger.hasExternalSink()) throw missing('audit.logger.sink', 'the production audit logger needs an external sink (the audit export)');
  return logger;
}

function readStores(value: unknown): SingleTenantDurableStores {
  const stores = readBag(value, ['idempotency', 'rateLimit'], 'durableStores');
  for (const name of ['idempotency', 'rateLimit'] as const) {
    const store = stores[name];
    if (store !== undefined && !isDurableStore(store)) throw invalid(`durableStores.${name}`, `durableStores.${name} must be a durable store from createLedgerStores (an in-memory store does not cross processes)`);
  }
  return stores as SingleTenantDurableStores;
}

function readEvaluators(value: unknown): readonly ToolPolicyEvaluator[] {
  if (value === undefined) return Object.freeze([]);
  if (!Array.isArray(value)) throw invalid('evaluators', 'evaluators must be an array of tool policy evaluators');
  return Object.freeze(
    value.map((e: unknown, i) => {
      if (!isObject(e) || typeof e['name'] !== 'string' || e['name'].length === 0 || typeof e['evaluate'] !== 'function') throw invalid(`evaluators[${i}]`, `evaluators[${i}] is not a tool policy evaluator`);
      if (isTenantIsolationEvaluator(e)) throw invalid(`evaluators[${i}]`, 'tenantIsolation() contradicts a deployment that serves one organization');
      // A snapshot: replacing the evaluator's method later changes nothing.
      const evaluator = e as unknown as ToolPolicyEvaluator;
      return Object.freeze({ name: evaluator.name, evaluate: evaluator.evaluate.bind(evaluator) });
    }),
  );
}

/**
 * Builds the validated connector policies of one physically isolated deployment: an organization
 * egress allowlist, the audit export (or an explicit development opt-out), the principal-permission
 * wiring and, for connectors that declare them, durable idempotency and rate-limit stores. Pass the
 * returned frozen set as `policies` to each connector; anything missing is a `SingleTenantPresetError`.
 */
export function singleTenantConnectorPolicies(options: SingleTenantConnectorPoliciesOptions): SingleTenantConnectorPolicies {
  const bag = readBag(options, OPTIONS, 'options');
  if (bag['egress'] === undefined) throw missing('egress', 'egress is required: { allowedDomains } of the organization');
  const egress = readBag(bag['egress'], ['allowedDomains'], 'egress');
  if (!Array.isArray(egress['allowedDomains'])) throw missing('egress.allowedDomains', 'egress.allowedDomains must list the organization allowlist');
  const allowedDomains = Object.freeze([...validateEgressPatterns(egress['allowedDomains'] as string[], 'singleTenantConnectorPolicies: egress.allowedDomains')]);
  const audit = readAudit(bag['audit']);
  if (bag['permissions'] === undefined) throw missing('permissions', 'permissions is required: { principalPermissions: "configured" | "not-configured" }');
  const permissions = readBag(bag['permissions'], ['principalPermissions'], 'permissions');
  const posture = permissions['principalPermissions'];
  if (posture !== 'configured' && posture !== 'not-configured') throw invalid('permissions.principalPermissions', 'permissions.principalPermissions must be "configured" or "not-configured"');
  const stores = readStores(bag['durableStores']);
  if (bag['fetch'] !== undefined && typeof bag['fetch'] !== 'function') throw invalid('fetch', 'fetch must be a function');
  if (bag['requireEgressEnforcement'] !== undefined && bag['requireEgressEnforcement'] !== true) throw invalid('requireEgressEnforcement', 'requireEgressEnforcement must be true when given');

  const baseline: Readonly<ConnectorPolicies> = Object.freeze({
    networkEgress: Object.freeze({ allowedDomains }),
    evaluators: readEvaluators(bag['evaluators']),
    ...(bag['fetch'] === undefined ? {} : { fetch: bag['fetch'] as typeof fetch }),
  });
  const metadata: PresetMetadata = Object.freeze({
    baseline,
    idempotencyStore: stores.idempotency,
    rateLimitStore: stores.rateLimit,
    audit,
    principalPermissions: posture,
    requireEgressEnforcement: bag['requireEgressEnforcement'] === true,
  });
  issued.add(metadata);
  // The symbol is enumerable so a spread copy carries it, and a changed member is then caught.
  return Object.freeze({ ...baseline, [PRESET]: metadata }) as SingleTenantConnectorPolicies;
}

/** What the preset lends a connector built with it. */
export interface PresetMembers {
  readonly idempotencyStore: IdempotencyStore | undefined;
  readonly rateLimitStore: RateLimitStore | undefined;
  readonly audit: AuditLogger | undefined;
}

/**
 * For `createConnector`: undefined when `policies` is no preset; otherwise checks the preset is
 * unchanged and covers what this manifest declares, and returns the stores and audit it lends.
 */
export function applySingleTenantPreset(
  connectorId: string,
  manifest: PermissionManifest,
  policies: ConnectorPolicies | undefined,
  own: { readonly idempotencyStore?: unknown; readonly rateLimitStore?: unknown; readonly audit?: unknown },
): PresetMembers | undefined {
  if (!isObject(policies) || !Object.hasOwn(policies, PRESET)) return undefined;
  const metadata = (policies as Record<symbol, unknown>)[PRESET];
  const fail = (code: SingleTenantPresetErrorCode, field: string, message: string) => new SingleTenantPresetError(code, field, `${WHERE}: connector ${connectorId}: ${message}`, connectorId);
  if (!isObject(metadata) || !issued.has(metadata)) throw fail('CONNECTOR.PRESET_TAMPERED', 'policies', 'the preset was not built by singleTenantConnectorPolicies');
  const preset = metadata as unknown as PresetMetadata;
  const policyRecord = policies as Record<string, unknown>;
  const baselineRecord = preset.baseline as Record<string, unknown>;
  for (const member of POLICY_MEMBERS) {
    if (policyRecord[member] !== baselineRecord[member]) throw fail('CONNECTOR.PRESET_TAMPERED', `policies.${member}`, `the preset's ${member} was replaced, removed or added after it was built`);
  }
  // The preset owns these: a connector-level one would bypass its checks.
  for (const field of ['idempotencyStore', 'rateLimitStore', 'audit'] as const) {
    if (own[field] !== undefined) throw fail('CONNECTOR.PRESET_INVALID', field, `${field} comes from the preset; do not set it on the connector`);
  }
  if (manifest?.idempotencyKey === true && !preset.idempotencyStore) throw fail('CONNECTOR.PRESET_INCOMPLETE', 'durableStores.idempotency', 'permissions.idempotencyKey needs durableStores.idempotency');
  if (manifest?.rateLimit !== undefined && !preset.rateLimitStore) throw fail('CONNECTOR.PRESET_INCOMPLETE', 'durableStores.rateLimit', 'permissions.rateLimit needs durableStores.rateLimit');
  if (manifest?.requiredPermissions !== undefined && preset.principalPermissions !== 'configured') {
    throw fail('CONNECTOR.PRESET_INCOMPLETE', 'permissions.principalPermissions', 'permissions.requiredPermissions needs permissions.principalPermissions: "configured"');
  }
  if (preset.requireEgressEnforcement && manifest?.egressEnforcement === 'declaration-only') throw fail('CONNECTOR.PRESET_INVALID', 'permissions.egressEnforcement', 'the preset requires enforced egress');
  return {
    // Only what the manifest declares: a store the connector would never use is not handed over.
    idempotencyStore: manifest?.idempotencyKey === true ? preset.idempotencyStore : undefined,
    rateLimitStore: manifest?.rateLimit !== undefined ? preset.rateLimitStore : undefined,
    audit: preset.audit,
  };
}
