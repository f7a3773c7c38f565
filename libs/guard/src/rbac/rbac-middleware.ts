import { type ProcessInputArgs, type Processor } from '@mastra/core/processors';
import { type AuditLogger } from '../audit/audit-logger.js';
import { auditContextFromRequestContext } from '../context.js';
import { AUDIT_UNAVAILABLE_REASON, recordGateDecision } from '../internal/gate-audit.js';
import { actorFromRequestContext, decideRoleGate, type RoleGateOptions, validateRoleGateOptions } from './actor.js';

/** The one reason every refused caller sees, whatever the cause. */
export const RBAC_DENIAL_REASON = 'Caller is not authorized to use this agent';

export interface RBACMiddlewareOptions extends RoleGateOptions {
  readonly audit?: AuditLogger;
  /** What the audit events name as the resource, e.g. `agent:support-bot`. */
  readonly resource?: string;
}

const OPTION_FIELDS = new Set(['allowedRoles', 'allowedPrincipalKinds', 'audit', 'resource']);

/**
 * A Mastra input processor that refuses a call before anything else runs unless the
 * trusted request context names an allowed actor. Usable on a plain Mastra agent too.
 */
export class RBACMiddleware implements Processor<'gatehouse-rbac'> {
  readonly id = 'gatehouse-rbac' as const;
  readonly name = 'gatehouse role gate';
  private readonly gate: RoleGateOptions;
  private readonly audit: AuditLogger | undefined;
  private readonly resource: string;

  constructor(options: RBACMiddlewareOptions) {
    if (options === null || typeof options !== 'object') throw new TypeError('RBACMiddleware: options are required');
    const unknown = Object.keys(options).filter((k) => !OPTION_FIELDS.has(k));
    if (unknown.length > 0) throw new TypeError(`RBACMiddleware: unknown option ${unknown.map((k) => `"${k}"`).join(', ')}`);
    this.gate = validateRoleGateOptions(options, 'RBACMiddleware');
    this.audit = options.audit;
    this.resource = options.resource ?? 'agent';
  }

  async processInput(args: ProcessInputArgs): Promise<ProcessInputArgs['messages']> {
    const { abort, requestContext, messages } = args;
    const actor = actorFromRequestContext(requestContext);
    const decision = decideRoleGate(actor, this.gate);
    const recorded = await recordGateDecision(this.audit, {
      boundary: 'agent-entry',
      action: 'agent.call',
      resource: this.resource,
      decision: decision.allowed ? 'allowed' : 'denied',
      code: decision.allowed ? 'RBAC.ALLOWED' : decision.code,
      reason: decision.allowed ? 'caller authorized' : RBAC_DENIAL_REASON,
      ...(decision.actor ? { actor: { ...decision.actor, kind: decision.actor.kind ?? 'human' } } : {}),
      context: auditContextFromRequestContext(requestContext),
    });
    if (!decision.allowed) abort(RBAC_DENIAL_REASON, { metadata: { code: decision.code } });
    if (!recorded) abort(AUDIT_UNAVAILABLE_REASON, { metadata: { code: 'AUDIT.REQUIRED_SINK_FAILED' } });
    return messages;
  }
}
