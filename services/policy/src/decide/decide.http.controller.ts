import { Body, Controller, Headers, HttpCode, Inject, Param, Post } from '@nestjs/common';
import { createEvent, DecisionRecordedV1, type DecisionOutcome, JsonValueSchema } from '@gatehouse/contracts';
import { createGatekeeper, type Gatekeeper, type GatekeeperContext, type GatekeeperDecision, type GatekeeperExplanation } from '@gatehouse/guard/gatekeeper';
import { type PublishedBundle } from '@gatehouse/policies';
import { randomUUID } from 'node:crypto';
import { z } from 'zod';
import { POLICY_SOURCE, type PolicyEngine } from '../engine/policy-engine.js';
import { PolicyError } from '../errors.js';
import { assertMay, authenticateOperator } from '../http/operator-auth.js';
import { parseRequest } from '../http/parse-request.js';
import { type PolicyOptions } from '../policy-config.js';
import { POLICY_ENGINE, POLICY_OPTIONS } from '../tokens.js';

/**
 * A decision request: the trusted identity and call come from the authenticated caller (an agent
 * runtime not written in TypeScript, or an operator trying things), the input is the untrusted
 * tool arguments; `revision` picks a published version (default the newest).
 */
const DecideBody = z.strictObject({
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

const OUTCOME: Record<GatekeeperDecision['effect'], DecisionOutcome> = { allow: 'allowed', deny: 'denied', 'require-approval': 'approval-required', rewrite: 'rewritten' };

@Controller('v1/policy-sets')
export class DecideController {
  /** Compiled gatekeepers by `<set>@<revision>`: versions are immutable, so a compiled one never goes stale. */
  private readonly compiled = new Map<string, Gatekeeper>();

  constructor(
    @Inject(POLICY_ENGINE) private readonly engine: PolicyEngine,
    @Inject(POLICY_OPTIONS) private readonly options: PolicyOptions,
  ) {}

  private resolve(authorization: string | undefined, policySetId: string, body: unknown): { gatekeeper: Gatekeeper; ctx: GatekeeperContext; request: z.infer<typeof DecideBody> } {
    assertMay(authenticateOperator(authorization, this.options.operators), policySetId);
    const request = parseRequest(DecideBody, body);
    const version: PublishedBundle | undefined = request.revision === undefined ? this.engine.current(policySetId) : this.engine.version(policySetId, request.revision);
    if (!version) throw new PolicyError('POLICY.NOT_FOUND');
    const key = `${version.policySetId}@${version.revision}`;
    let gatekeeper = this.compiled.get(key);
    if (!gatekeeper) {
      gatekeeper = createGatekeeper({ bundle: version.bundle, revision: version.revision });
      if (this.compiled.size >= 256) this.compiled.clear();
      this.compiled.set(key, gatekeeper);
    }
    return { gatekeeper, ctx: { identity: request.identity, call: request.call, input: request.input }, request };
  }

  /** What the bundle decides for this call, never executing a tool nor creating an approval, nor recording anything. */
  @Post(':policySetId/simulate')
  @HttpCode(200)
  simulate(@Headers('authorization') authorization: string | undefined, @Param('policySetId') policySetId: string, @Body() body: unknown): GatekeeperDecision {
    const { gatekeeper, ctx, request } = this.resolve(authorization, policySetId, body);
    return gatekeeper.simulate(ctx, request.mode === undefined ? undefined : { mode: request.mode });
  }

  /** The decision plus, for each policy, why it matched and decided, or did not. Executes and records nothing. */
  @Post(':policySetId/explain')
  @HttpCode(200)
  explain(@Headers('authorization') authorization: string | undefined, @Param('policySetId') policySetId: string, @Body() body: unknown): GatekeeperExplanation {
    const { gatekeeper, ctx } = this.resolve(authorization, policySetId, body);
    return gatekeeper.explain(ctx);
  }

  /**
   * The decision for an agent that is not written in TypeScript: made as the guard library makes
   * it, and recorded the same way (a `DecisionRecorded` on the audit topic, with the bundle version).
   */
  @Post(':policySetId/evaluate')
  @HttpCode(200)
  async evaluate(@Headers('authorization') authorization: string | undefined, @Param('policySetId') policySetId: string, @Body() body: unknown): Promise<GatekeeperDecision & { decisionId: string }> {
    const { gatekeeper, ctx } = this.resolve(authorization, policySetId, body);
    const decision = gatekeeper.evaluate(ctx);
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
    // Fail closed: a decision that cannot be recorded is not handed out.
    await this.engine.record(event);
    return { ...decision, decisionId };
  }
}
