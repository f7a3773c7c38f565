import { declaredEgressWithin, validateEgressPatterns } from './egress/index.js';
import { type ConnectorPolicies, type PermissionManifest, SIDE_EFFECTS, type ToolPolicyEvaluator } from './types.js';

const MANIFEST_FIELDS = new Set(['sideEffect', 'egress', 'egressEnforcement', 'requiresApproval', 'requiredPermissions', 'dryRun', 'idempotencyKey', 'rateLimit', 'rateLimitAlgorithm', 'background']);
const POLICY_FIELDS = new Set(['networkEgress', 'evaluators', 'destructiveRequiresApproval', 'fetch']);
const BOOLEAN_FLAGS = ['requiresApproval', 'dryRun', 'idempotencyKey', 'background'] as const;
/** `resource:action` identifiers, e.g. `refunds:create`. */
export const PERMISSION_IDENTIFIER = /^[a-z][a-z0-9_.-]*:[a-z][a-z0-9_.*-]*$/;
// breakwater's grammar: two or more lowercase dot-separated segments (`crm.accounts.read`), at most
// 200 characters. Accepted as it is, so a migrated manifest keeps its identifiers unchanged.
const DOTTED_PERMISSION = /^(?=.{3,200}$)[a-z][a-z0-9]*(?:\.[a-z][a-z0-9]*)+$/;

/**
 * True for a permission identifier a manifest may require and a principal projection may hold:
 * gatehouse's `resource:action` (at most 256 characters) or breakwater's dotted `resource.action`.
 */
export function isPermissionIdentifier(value: unknown): value is string {
  return typeof value === 'string' && value.length <= 256 && (PERMISSION_IDENTIFIER.test(value) || DOTTED_PERMISSION.test(value));
}

/**
 * Whether calls of a connector with this manifest and these policies need an approval grant:
 * `requiresApproval`, or a destructive side effect unless `destructiveRequiresApproval` is false.
 */
export function approvalRequired(manifest: Pick<PermissionManifest, 'sideEffect' | 'requiresApproval'>, policies?: Pick<ConnectorPolicies, 'destructiveRequiresApproval'>): boolean {
  return manifest.requiresApproval === true || (manifest.sideEffect === 'destructive' && policies?.destructiveRequiresApproval !== false);
}

const UNITS: Record<string, number> = { second: 1_000, minute: 60_000, hour: 3_600_000, day: 86_400_000 };

/** Parses `10/hour`-style budgets; undefined when malformed. */
export function parseRateLimit(value: string): { count: number; windowMs: number } | undefined {
  const match = /^(\d{1,15})\/(second|minute|hour|day)$/.exec(value);
  if (!match) return undefined;
  const count = Number(match[1]);
  if (!Number.isSafeInteger(count) || count < 1) return undefined;
  return { count, windowMs: UNITS[match[2] as string] as number };
}

export interface ResolvedManifest {
  readonly manifest: PermissionManifest;
  readonly egress: readonly string[];
  readonly rateLimit: { readonly count: number; readonly windowMs: number; readonly algorithm: 'fixed-window' | 'sliding-window' } | undefined;
  readonly approvalRequired: boolean;
}

/**
 * Validates a manifest and its policies together. Everything that is not exactly right is
 * a TypeError at construction: a misspelled requirement is refused, never ignored.
 */
export function resolveManifest(
  connectorId: string,
  manifest: PermissionManifest,
  policies: ConnectorPolicies | undefined,
  features: { dryRunExecute: boolean; idempotencyStore: boolean; rateLimitStore: boolean },
): ResolvedManifest {
  const where = `createConnector(${connectorId})`;
  if (manifest === null || typeof manifest !== 'object' || Array.isArray(manifest)) throw new TypeError(`${where}: permissions must be an object`);
  const unknown = Object.keys(manifest).filter((k) => !MANIFEST_FIELDS.has(k));
  if (unknown.length > 0) throw new TypeError(`${where}: unknown permission ${unknown.map((k) => `"${k}"`).join(', ')}`);
  if (!SIDE_EFFECTS.includes(manifest.sideEffect)) throw new TypeError(`${where}: sideEffect must be one of ${SIDE_EFFECTS.join(', ')}`);
  for (const flag of BOOLEAN_FLAGS) {
    if (manifest[flag] !== undefined && typeof manifest[flag] !== 'boolean') throw new TypeError(`${where}: permissions.${flag} must be a boolean`);
  }
  if (manifest.egressEnforcement !== undefined && manifest.egressEnforcement !== 'enforced' && manifest.egressEnforcement !== 'declaration-only') {
    throw new TypeError(`${where}: egressEnforcement must be 'enforced' or 'declaration-only'`);
  }
  const egress = manifest.egress === undefined ? [] : validateEgressPatterns(manifest.egress, `${where}: permissions.egress`);
  if (manifest.requiredPermissions !== undefined) {
    if (!Array.isArray(manifest.requiredPermissions) || !manifest.requiredPermissions.every(isPermissionIdentifier)) {
      throw new TypeError(`${where}: requiredPermissions must be resource:action (or dotted resource.action) identifiers`);
    }
  }
  if (manifest.dryRun && !features.dryRunExecute) throw new TypeError(`${where}: dryRun requires dryRunExecute`);
  if (!manifest.dryRun && features.dryRunExecute) throw new TypeError(`${where}: dryRunExecute is given but permissions.dryRun is not true`);
  if (manifest.idempotencyKey && !features.idempotencyStore) throw new TypeError(`${where}: idempotencyKey requires an idempotencyStore`);
  let rateLimit: ResolvedManifest['rateLimit'];
  if (manifest.rateLimit !== undefined) {
    const parsed = typeof manifest.rateLimit === 'string' ? parseRateLimit(manifest.rateLimit) : undefined;
    if (!parsed) throw new TypeError(`${where}: rateLimit must look like 10/hour (second, minute, hour or day)`);
    const algorithm = manifest.rateLimitAlgorithm ?? 'fixed-window';
    if (algorithm !== 'fixed-window' && algorithm !== 'sliding-window') throw new TypeError(`${where}: rateLimitAlgorithm must be fixed-window or sliding-window`);
    rateLimit = { ...parsed, algorithm };
    if (!features.rateLimitStore) throw new TypeError(`${where}: rateLimit requires a rateLimitStore`);
  }
  if (manifest.rateLimitAlgorithm !== undefined && manifest.rateLimit === undefined) throw new TypeError(`${where}: rateLimitAlgorithm without rateLimit`);
  if (manifest.background && manifest.sideEffect !== 'read') throw new TypeError(`${where}: background is allowed for read connectors only`);

  if (policies !== undefined) {
    if (policies === null || typeof policies !== 'object' || Array.isArray(policies)) throw new TypeError(`${where}: policies must be an object`);
    const unknownPolicies = Object.keys(policies).filter((k) => !POLICY_FIELDS.has(k));
    if (unknownPolicies.length > 0) throw new TypeError(`${where}: unknown policy ${unknownPolicies.map((k) => `"${k}"`).join(', ')}`);
    if (policies.destructiveRequiresApproval !== undefined && typeof policies.destructiveRequiresApproval !== 'boolean') {
      throw new TypeError(`${where}: destructiveRequiresApproval must be a boolean`);
    }
    if (policies.fetch !== undefined && typeof policies.fetch !== 'function') throw new TypeError(`${where}: policies.fetch must be a function`);
    if (policies.evaluators !== undefined) validateEvaluators(policies.evaluators, where);
    if (policies.networkEgress !== undefined) {
      const network = policies.networkEgress;
      if (network === null || typeof network !== 'object' || !Array.isArray(network.allowedDomains)) {
        throw new TypeError(`${where}: networkEgress must be { allowedDomains: string[] }`);
      }
      const extra = Object.keys(network).filter((k) => k !== 'allowedDomains' && k !== 'allowPrivateAddresses');
      if (extra.length > 0) throw new TypeError(`${where}: unknown networkEgress field ${extra.map((k) => `"${k}"`).join(', ')}`);
      const allowlist = validateEgressPatterns(network.allowedDomains, `${where}: networkEgress.allowedDomains`);
      if (network.allowPrivateAddresses !== undefined) validateEgressPatterns(network.allowPrivateAddresses, `${where}: networkEgress.allowPrivateAddresses`);
      const outside = declaredEgressWithin(egress, allowlist);
      if (outside.length > 0) throw new TypeError(`${where}: declared egress outside the organization allowlist: ${outside.join(', ')}`);
    }
  }
  return Object.freeze({ manifest: Object.freeze({ ...manifest, egress: Object.freeze([...egress]) }), egress, rateLimit, approvalRequired: approvalRequired(manifest, policies) });
}

function validateEvaluators(evaluators: readonly ToolPolicyEvaluator[], where: string): void {
  if (!Array.isArray(evaluators)) throw new TypeError(`${where}: policies.evaluators must be an array`);
  evaluators.forEach((e, i) => {
    if (e === null || typeof e !== 'object' || typeof e.name !== 'string' || e.name.length === 0 || typeof e.evaluate !== 'function') {
      throw new TypeError(`${where}: policies.evaluators[${i}] is not a ToolPolicyEvaluator`);
    }
  });
}
