import { createEvent, DecisionRecordedV1, type DecisionOutcome, JsonValueSchema } from '@gatehouse/contracts';
import { createGatekeeper, type Gatekeeper, type GatekeeperContext, type GatekeeperDecision, type GatekeeperExplanation } from '@gatehouse/gatekeeper';
import { activeTraceContext } from '@gatehouse/kafka';
import { type PublishedBundle } from '@gatehouse/policies';
import { randomUUID } from 'node:crypto';
import { z } from 'zod';
import { POLICY_SOURCE, type PolicyEngine } from '../engine/policy-engine.js';
import { PolicyError } from '../errors.js';
import { type Attribution, attributedIdentity } from './attribution.js';

/**
 * A decision request: the identity and call to decide on, the input (the untrusted tool
 * arguments); `revision` picks a published version (default the newest). `simulate` and
 * `explain` decide on the identity as given (they record nothing); `evaluate` records, so its
 * identity comes from the authenticated caller instead (`attribute`), the body's only as far as
 * its tenant is one of the caller's.
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
   * `DecisionRecorded` on the audit topic carrying the bundle version, in the attribution's tenant
   * and as its actor (`attribute`: the authenticated operator, never the body). A decision that
   * cannot be recorded is not handed out (fail closed).
   */
  async evaluate(policySetId: string, request: DecideRequest, attribution: Attribution): Promise<RecordedDecision> {
    const ctx: GatekeeperContext = { identity: attributedIdentity(attribution, request.identity), call: request.call, input: request.input };
    const decision = this.gatekeeper(policySetId, request.revision).evaluate(ctx);
    const decisionId = randomUUID();
    // The record joins the trace of the request that asked for it (none with the SDK off).
    const trace = activeTraceContext();
    const event = createEvent(
      DecisionRecordedV1,
      { source: POLICY_SOURCE, tenant: attribution.tenant, subject: decisionId, ...(trace && { trace }) },
      {
        decisionId,
        boundary: 'policy',
        outcome: decision.mode === 'audit' ? 'observed' : OUTCOME[decision.effect],
        code: `POLICY.${decision.effect.toUpperCase().replace('-', '_')}`,
        reason: decision.reason.slice(0, 512),
        actor: attribution.actor,
        ...(attribution.agentId !== undefined && { agentId: attribution.agentId }),
        toolId: ctx.call.tool,
        policy: { bundleId: decision.bundle.policySetId, revision: decision.bundle.revision ?? 0, ...(decision.ruleId && { ruleId: decision.ruleId }) },
        redactedPaths: [],
        attributes: { mode: decision.mode, ...(decision.policyId && { policyId: decision.policyId }), ...(decision.fault && { fault: decision.fault }) },
      },
    );
    await this.engine.record(event);
    return { ...decision, decisionId, recorded: true, recordedAs: attribution };
  }

  /**
   * The decision for a request whose asker the service cannot authenticate (the Kafka
   * request/reply transport: a record does not say which principal wrote it). Made on the
   * identity the request claims, as the asker's own guard would, and recorded nowhere: the
   * service never writes a decision attributed to itself on an unauthenticated claim. The asker
   * records it as itself if it must (agents may append to the audit topic), with this decision id.
   */
  answer(policySetId: string, request: DecideRequest): UnrecordedDecision {
    const decision = this.gatekeeper(policySetId, request.revision).evaluate(PolicyDecisions.context(request));
    return { ...decision, decisionId: randomUUID(), recorded: false };
  }
}

/** An `evaluate` answer: the decision, its record's id, and whom it was recorded as. */
export type RecordedDecision = GatekeeperDecision & { readonly decisionId: string; readonly recorded: true; readonly recordedAs: Attribution };

/** A decision the service did not record (`answer`). */
export type UnrecordedDecision = GatekeeperDecision & { readonly decisionId: string; readonly recorded: false };
