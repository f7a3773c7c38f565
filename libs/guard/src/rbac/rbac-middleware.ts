import { readOptions } from '@gatehouse/contracts';
import { type ProcessInputArgs, type Processor } from '@mastra/core/processors';
import { type AuditLogger } from '../audit/audit-logger.js';
import { auditContextFromRequestContext } from '../context.js';
import { AUDIT_UNAVAILABLE_REASON, recordGateDecision } from '../internal/gate-audit.js';
import { type Actor, actorFromRequestContext, decideRoleGate, parseActor, type RoleGateOptions, validateRoleGateOptions } from './actor.js';

/** The one reason every refused caller sees, whatever the cause. */
export const RBAC_DENIAL_REASON = 'Caller is not authorized to use this agent';

export interface RBACMiddlewareOptions extends RoleGateOptions {
  readonly audit?: AuditLogger;
  /** What the audit events name as the resource, e.g. `agent:support-bot`. */
  readonly resource?: string;
  /**
   * Trusted host code that finds the caller (default: `ACTOR_CONTEXT_KEY` of the request context).
   * What it returns is validated like any actor; a throw or anything malformed is no actor, denied.
   */
  readonly getActor?: (args: ProcessInputArgs) => unknown;
}

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
  private readonly getActor: ((args: ProcessInputArgs) => unknown) | undefined;

  constructor(options: RBACMiddlewareOptions) {
    if (options === null || typeof options !== 'object') throw new TypeError('RBACMiddleware: options are required');
    readOptions('RBACMiddleware', options, ['allowedRoles', 'allowedPrincipalKinds', 'audit', 'resource', 'getActor']);
    if (options.getActor !== undefined && typeof options.getActor !== 'function') throw new TypeError('RBACMiddleware: getActor must be a function');
    this.gate = validateRoleGateOptions(options, 'RBACMiddleware');
    this.audit = options.audit;
    this.resource = options.resource ?? 'agent';
    this.getActor = options.getActor;
  }

  /** The caller: from the host's `getActor` when given, else the request context; always validated. */
  private actorOf(args: ProcessInputArgs): Actor | undefined {
    if (!this.getActor) return actorFromRequestContext(args.requestContext);
    try {
      return parseActor(this.getActor(args));
    } catch {
      return undefined;
    }
  }

  async processInput(args: ProcessInputArgs): Promise<ProcessInputArgs['messages']> {
    const started = performance.now();
    const { abort, requestContext, messages } = args;
    const actor = this.actorOf(args);
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
    }, started);
    if (!decision.allowed) abort(RBAC_DENIAL_REASON, { metadata: { code: decision.code } });
    if (!recorded) abort(AUDIT_UNAVAILABLE_REASON, { metadata: { code: 'AUDIT.REQUIRED_SINK_FAILED' } });
    return messages;
  }
}
