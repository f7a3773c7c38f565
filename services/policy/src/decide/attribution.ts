import { type GatekeeperIdentity } from '@gatehouse/gatekeeper';
import { type ActorKind, type PolicyOperator } from '../policy-config.js';
import { type DecideRequest } from './policy-decisions.js';

/**
 * Who a recorded decision is about: the authenticated operator, never the request body. A
 * body's `actor`, `agent` and `runId` are claims anyone holding a key could make about anyone;
 * recorded, they let a read-only operator write decisions into any tenant's trail as any run
 * and actor. So the decision is made, and recorded, as the operator itself, in one of its own
 * tenants.
 */
export interface Attribution {
  readonly tenant: string;
  readonly actor: { readonly id: string; readonly role: string; readonly kind: ActorKind };
  readonly agentId?: string;
}

/** Why a decision may not be recorded for this caller. */
export type AttributionRefusal =
  /** The operator has no tenant to record for. */
  | 'read-only'
  /** The request names a tenant that is not one of the operator's. */
  | 'foreign-tenant'
  /** The operator records for several tenants and the request names none. */
  | 'tenant-required';

export type AttributionAnswer = { readonly ok: true; readonly attribution: Attribution } | { readonly ok: false; readonly refusal: AttributionRefusal };

/** The attribution of a decision `operator` asks to record, with the tenant it claims checked against its own. */
export function attribute(operator: PolicyOperator, claimed: DecideRequest['identity']): AttributionAnswer {
  if (operator.tenants.size === 0) return { ok: false, refusal: 'read-only' };
  let tenant = claimed.tenant;
  if (tenant === undefined) {
    if (operator.tenants.size > 1) return { ok: false, refusal: 'tenant-required' };
    [tenant] = operator.tenants;
  }
  if (tenant === undefined || !operator.tenants.has(tenant)) return { ok: false, refusal: 'foreign-tenant' };
  return { ok: true, attribution: { tenant, actor: { id: operator.id, role: operator.role, kind: operator.kind }, ...(operator.agent !== undefined && { agentId: operator.agent }) } };
}

/**
 * The identity a recorded decision is made on: the attribution's, plus the environment the
 * caller names (where the call runs, not who makes it; it is not recorded). No run: a run id in
 * a body is a claim, and the record's subject is its decision id.
 */
export function attributedIdentity(attribution: Attribution, claimed: DecideRequest['identity']): GatekeeperIdentity {
  return {
    tenant: attribution.tenant,
    actor: { id: attribution.actor.id, role: attribution.actor.role },
    ...(attribution.agentId !== undefined && { agent: attribution.agentId }),
    ...(claimed.environment !== undefined && { environment: claimed.environment }),
  };
}
