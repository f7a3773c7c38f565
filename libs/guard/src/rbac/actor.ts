import { type RequestContext } from '@mastra/core/request-context';
import { ACTOR_CONTEXT_KEY, readContextValue } from '../context.js';

export type PrincipalKind = 'human' | 'service' | 'agent' | 'system';
export const PRINCIPAL_KINDS: readonly PrincipalKind[] = ['human', 'service', 'agent', 'system'];

/** The caller, from trusted host code. `kind` absent means `human`. */
export interface Actor {
  readonly id: string;
  readonly role: string;
  readonly kind?: PrincipalKind;
}

const ACTOR_FIELDS = new Set(['id', 'role', 'kind']);

/**
 * Validates an actor value. Anything but a plain object with a non-empty `id` and `role`
 * and an optional known `kind` — including an object with any other field — is no actor.
 */
export function parseActor(value: unknown): Actor | undefined {
  if (value === null || typeof value !== 'object' || Array.isArray(value)) return undefined;
  const proto = Object.getPrototypeOf(value) as unknown;
  if (proto !== Object.prototype && proto !== null) return undefined;
  const keys = Reflect.ownKeys(value);
  if (keys.some((k) => typeof k !== 'string' || !ACTOR_FIELDS.has(k))) return undefined;
  const record = value as Record<string, unknown>;
  // Data properties only: an accessor could answer differently each time it is read.
  for (const key of keys) {
    const descriptor = Object.getOwnPropertyDescriptor(value, key);
    if (!descriptor || !('value' in descriptor)) return undefined;
  }
  const { id, role, kind } = record;
  if (typeof id !== 'string' || id.trim().length === 0 || id.length > 256) return undefined;
  if (typeof role !== 'string' || role.trim().length === 0 || role.length > 128) return undefined;
  if (kind !== undefined && !PRINCIPAL_KINDS.includes(kind as PrincipalKind)) return undefined;
  return Object.freeze(kind === undefined ? { id, role } : { id, role, kind: kind as PrincipalKind });
}

/** The validated actor of a call, or undefined (which every gate denies). */
export function actorFromRequestContext(requestContext: RequestContext | unknown): Actor | undefined {
  return parseActor(readContextValue(requestContext, ACTOR_CONTEXT_KEY));
}

/** breakwater's name for the default actor lookup: `actorFromRequestContext`. */
export const getActor: (requestContext: RequestContext | unknown) => Actor | undefined = actorFromRequestContext;

/**
 * A role label. Gatehouse roles are open strings matched exactly against `allowedRoles`; breakwater
 * closed them to {@link ROLES}.
 */
export type Role = string;

/** breakwater's built-in role vocabulary, for hosts that build their allowlists from it. */
export const ROLES: readonly Role[] = Object.freeze(['admin', 'builder', 'operator', 'reviewer', 'viewer']);

/** A permission identifier: `resource:action`, or breakwater's dotted `resource.action` (see `isPermissionIdentifier`). */
export type Permission = string;

export interface RoleGateOptions {
  /** Exact allowlist of roles for human callers; no hierarchy. */
  readonly allowedRoles: readonly string[];
  /** Principal kinds that may call at all; default `['human']`. */
  readonly allowedPrincipalKinds?: readonly PrincipalKind[];
}

export type RoleGateDecision =
  | { readonly allowed: true; readonly actor: Actor }
  | { readonly allowed: false; readonly code: 'RBAC.NO_ACTOR' | 'RBAC.KIND_NOT_ALLOWED' | 'RBAC.ROLE_NOT_ALLOWED'; readonly actor?: Actor };

/** The role gate's decision: kind first; the role is consulted only for human callers. */
export function decideRoleGate(actor: Actor | undefined, options: RoleGateOptions): RoleGateDecision {
  if (!actor) return { allowed: false, code: 'RBAC.NO_ACTOR' };
  const kind = actor.kind ?? 'human';
  const kinds = options.allowedPrincipalKinds ?? ['human'];
  if (!kinds.includes(kind)) return { allowed: false, code: 'RBAC.KIND_NOT_ALLOWED', actor };
  if (kind !== 'human') return { allowed: true, actor };
  if (!options.allowedRoles.includes(actor.role)) return { allowed: false, code: 'RBAC.ROLE_NOT_ALLOWED', actor };
  return { allowed: true, actor };
}

/** Validates role-gate options; throws a TypeError naming the problem. */
export function validateRoleGateOptions(options: RoleGateOptions, where: string): RoleGateOptions {
  if (!Array.isArray(options.allowedRoles) || options.allowedRoles.some((r) => typeof r !== 'string' || r.trim().length === 0)) {
    throw new TypeError(`${where}: allowedRoles must be an array of non-empty role names`);
  }
  const kinds = options.allowedPrincipalKinds;
  if (kinds !== undefined && (!Array.isArray(kinds) || kinds.length === 0 || kinds.some((k) => !PRINCIPAL_KINDS.includes(k)))) {
    throw new TypeError(`${where}: allowedPrincipalKinds must be a non-empty array of ${PRINCIPAL_KINDS.join(', ')}`);
  }
  if (kinds === undefined || kinds.includes('human')) {
    if (options.allowedRoles.length === 0) throw new TypeError(`${where}: allowedRoles must name at least one role for human callers`);
  }
  return Object.freeze({
    allowedRoles: Object.freeze([...options.allowedRoles]),
    allowedPrincipalKinds: Object.freeze([...(kinds ?? ['human'])]),
  });
}
