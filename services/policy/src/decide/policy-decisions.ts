import { createEvent, DecisionRecordedV1, type DecisionOutcome, JsonValueSchema } from '@gatehouse/contracts';
import { createGatekeeper, type Gatekeeper, type GatekeeperContext, type GatekeeperDecision, type GatekeeperExplanation } from '@gatehouse/guard/gatekeeper';
import { type PublishedBundle } from '@gatehouse/policies';
import { randomUUID } from 'node:crypto';
import { z } from 'zod';
import { POLICY_SOURCE, type PolicyEngine } from '../engine/policy-engine.js';
import { PolicyError } from '../errors.js';

/**
 * A decision request: the trusted identity and call come from the authenticated caller (an agent
 * runtime not written in TypeScript, or an operator trying things), the input is the untrusted
 * tool arguments; `revision` picks a published version (default the newest).
 */
export const DecideRequest = z.strictObject({
  identity: z.strictObject({
    agent: z.string().min(1).max(256).optional(),
    tenant: z.string().min(1).max(256).optional(),
    environment: z.string().min(1).max(64).optional(),
    actor: z.strictObject({ id: z.string().min(1).max(256), role: z.string().min(1).max(128) }).optional(),
    runId: z.string().min(1).max(256).optional(),
  }),
  call: z.strictObject({ tool: z.string().min(1).max(256) }),
  input: JsonValueSchema,
  revision: z.number().int().min(1).optional(),
  mode: z.enum(['enforce', 'audit', 'disabled']).optional(),
});
export type DecideRequest = z.infer<typeof DecideRequest>;

const OUTCOME: Record<GatekeeperDecision['effect'], DecisionOutcome> = { allow: 'allowed', deny: 'denied', 'require-approval': 'approval-required', rewrite: 'rewritten' };

/** Decisions on published bundles, shared by the REST API and the Kafka request/reply transport. */
export class PolicyDecisions {
  /** Compiled gatekeepers by `<set>@<revision>`: versions are immutable, so a compiled one never goes stale. */
  private readonly compiled = new Map<string, Gatekeeper>();

  constructor(private readonly engine: PolicyEngine) {}

  private gatekeeper(policySetId: string, revision: number | undefined): Gatekeeper {
    const version: PublishedBundle | undefined = revision === undefined ? this.engine.current(policySetId) : this.engine.version(policySetId, revision);
    if (!version) throw new PolicyError('POLICY.NOT_FOUND');
    const key = `${version.policySetId}@${version.revision}`;
    let gatekeeper = this.compiled.get(key);
    if (!gatekeeper) {
      gatekeeper = createGatekeeper({ bundle: version.bundle, revision: version.revision });
      if (this.compiled.size >= 256) this.compiled.clear();
      this.compiled.set(key, gatekeeper);
    }
    return gatekeeper;
  }

  private static context(request: DecideRequest): GatekeeperContext {
    return { identity: request.identity, call: request.call, input: request.input };
  }

  /** What the bundle decides for this call: no tool runs, no approval is created, nothing is recorded. */
  simulate(policySetId: string, request: DecideRequest): GatekeeperDecision {
    return this.gatekeeper(policySetId, request.revision).simulate(PolicyDecisions.context(request), request.mode === undefined ? undefined : { mode: request.mode });
  }

  /** The decision and, per policy, why it decided or did not match; executes and records nothing. */
  explain(policySetId: string, request: DecideRequest): GatekeeperExplanation {
    return this.gatekeeper(policySetId, request.revision).explain(PolicyDecisions.context(request));
  }

  /**
   * The decision, made as the guard library makes it and recorded the same way: a
   * `DecisionRecorded` on the audit topic carrying the bundle version. A decision that cannot be
   * recorded is not handed out (fail closed).
   */
  async evaluate(policySetId: string, request: DecideRequest): Promise<GatekeeperDecision & { decisionId: string }> {
    const ctx = PolicyDecisions.context(request);
    const decision = this.gatekeeper(policySetId, request.revision).evaluate(ctx);
    const decisionId = randomUUID();
    const { identity } = ctx;
    const event = createEvent(
      DecisionRecordedV1,
      { source: POLICY_SOURCE, tenant: identity.tenant ?? 'default', subject: identity.runId ?? decisionId, ...(identity.runId !== undefined && { correlationId: identity.runId }) },
      {
        decisionId,
        boundary: 'policy',
        outcome: decision.mode === 'audit' ? 'observed' : OUTCOME[decision.effect],
        code: `POLICY.${decision.effect.toUpperCase().replace('-', '_')}`,
        reason: decision.reason.slice(0, 512),
        ...(identity.actor && { actor: { ...identity.actor, kind: 'human' as const } }),
        ...(identity.agent && { agentId: identity.agent }),
        ...(identity.runId && { runId: identity.runId }),
        toolId: ctx.call.tool,
        policy: { bundleId: decision.bundle.policySetId, revision: decision.bundle.revision ?? 0, ...(decision.ruleId && { ruleId: decision.ruleId }) },
        redactedPaths: [],
        attributes: { mode: decision.mode, ...(decision.policyId && { policyId: decision.policyId }), ...(decision.fault && { fault: decision.fault }) },
      },
    );
    await this.engine.record(event);
    return { ...decision, decisionId };
  }
}
