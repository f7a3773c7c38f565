// The gatekeeper behind the guardrail port, at `tool-args`: a thin adapter that maps the
// decision to a verdict and carries the bundle version in `detections` and in `gatekeeper`.
import { type JsonValue } from '@gatehouse/contracts';
import { assertGatekeeperOptions, type BundleVersion, type Gatekeeper, type GatekeeperDecision, type GatekeeperEffect } from '@gatehouse/gatekeeper';
import { type GuardrailReasonCode } from '../guardrails/reasons.js';
import { type Guardrail, type GuardrailInput, type GuardrailVerdict } from '../guardrails/types.js';

/** A verdict from the gatekeeper guardrail: the port's verdict plus the decision's provenance. */
export interface GatekeeperVerdict extends GuardrailVerdict {
  readonly gatekeeper: {
    readonly effect: GatekeeperEffect;
    readonly mode: GatekeeperDecision['mode'];
    readonly bundle: BundleVersion;
    readonly policyId?: string;
    readonly ruleId?: string;
    readonly fault?: string;
    /** In audit mode: the effect enforce mode would have had. */
    readonly wouldHave?: GatekeeperEffect;
  };
}

export interface GatekeeperGuardrailOptions {
  /** Guardrail name (default `gatekeeper`). */
  readonly name?: string;
  /** The deployment environment, from host configuration (the port's context has none). */
  readonly environment?: string;
}

/** `gatekeeper.bundle:<policySetId>@<revision>` (revision `-` when unknown). */
export function bundleDetection(bundle: BundleVersion): string {
  return `gatekeeper.bundle:${bundle.policySetId}@${bundle.revision ?? '-'}`;
}

// The fault codes a decision can carry (every GATEKEEPER.* code the gatekeeper's evaluation raises).
const FAULT_CODES = [
  'BUNDLE_UNAVAILABLE', 'CALL_INVALID', 'EVALUATION_FAILED', 'EXPRESSION_FORBIDDEN_PATH', 'EXPRESSION_LIMIT', 'EXPRESSION_SYNTAX', 'INPUT_TOO_DEEP', 'NO_TOOL_CALL',
  'PREDICATE_FAILED', 'PREDICATE_NOT_BOOLEAN', 'RECORD_FAILED', 'REWRITE_BOUND_EXCEEDED', 'REWRITE_FAILED', 'REWRITE_INVALID',
  'REWRITE_NOT_OBJECT', 'REWRITE_PATH_CONFLICT', 'REWRITE_UNVALIDATED', 'REWRITE_VALUE_UNDEFINED', 'UNKNOWN_PREDICATE',
] as const;
const FIXED_DETECTIONS: readonly string[] = Object.freeze([
  ...(['allow', 'deny', 'require-approval', 'rewrite'] as const).map((effect) => `gatekeeper.${effect}`),
  ...FAULT_CODES.map((code) => `gatekeeper.fault:GATEKEEPER.${code}`),
]);

/**
 * What the gatekeeper guardrail declares under the bundle in force: its effects and fault codes, the
 * bundle's version and its policies' ids: the operator's configuration, never the tool arguments.
 */
function declaredUnder(gatekeeper: Gatekeeper): () => readonly string[] {
  let cached: { readonly version: BundleVersion; readonly names: readonly string[] } | undefined;
  return () => {
    const version = gatekeeper.version();
    if (cached?.version !== version) {
      const policies = gatekeeper.policyIds().map((id) => `gatekeeper.policy:${id}`);
      cached = { version, names: Object.freeze([...FIXED_DETECTIONS, bundleDetection(version), ...policies]) };
    }
    return cached.names;
  };
}

const ACTION_OF = { allow: 'allow', deny: 'deny', 'require-approval': 'approve', rewrite: 'rewrite' } as const;
const REASON_OF: Readonly<Record<GatekeeperEffect, GuardrailReasonCode>> = { allow: 'policy.allowed', deny: 'policy.denied', 'require-approval': 'policy.approval-required', rewrite: 'policy.rewritten' };

/** The catalogue reason of a decision: the port carries codes, and the fault's own code is in `detections`. */
function reasonOf(decision: Pick<GatekeeperDecision, 'effect' | 'fault' | 'policyId'>): GuardrailReasonCode {
  if (decision.fault !== undefined) return 'policy.fault';
  if (decision.effect === 'deny' && decision.policyId === undefined) return 'policy.no-match';
  return REASON_OF[decision.effect];
}

/**
 * A port verdict with the decision's provenance attached as a non-enumerable `gatekeeper`
 * property: a caller of `check` reads it, while the guardrail runner — which refuses any verdict
 * with a field the port does not define, and copies only the port's fields — sees a plain verdict.
 */
function withProvenance(verdict: GuardrailVerdict, provenance: GatekeeperVerdict['gatekeeper']): GatekeeperVerdict {
  return Object.defineProperty({ ...verdict }, 'gatekeeper', { value: provenance, enumerable: false }) as GatekeeperVerdict;
}

/** Turns a decision into a port verdict (audit mode → `observe` unless the call was malformed, faults → outcome `partial`). */
export function verdictOf(decision: GatekeeperDecision): GatekeeperVerdict {
  const enforced = decision.wouldHave ?? decision;
  const detections = [`gatekeeper.${enforced.effect}`, bundleDetection(decision.bundle)];
  if (enforced.policyId !== undefined) detections.push(`gatekeeper.policy:${enforced.policyId}`);
  if (enforced.fault !== undefined) detections.push(`gatekeeper.fault:${enforced.fault}`);
  const provenance = {
    effect: decision.effect,
    mode: decision.mode,
    bundle: decision.bundle,
    ...(enforced.policyId === undefined ? {} : { policyId: enforced.policyId }),
    ...(enforced.ruleId === undefined ? {} : { ruleId: enforced.ruleId }),
    ...(enforced.fault === undefined ? {} : { fault: enforced.fault }),
    ...(decision.wouldHave === undefined ? {} : { wouldHave: decision.wouldHave.effect }),
  };
  const outcome = enforced.fault === undefined ? 'complete' : 'partial';
  // Audit mode observes what the policies would have done; a malformed call (no `wouldHave`: the
  // engine denied it in audit mode too, GATEKEEPER.CALL_INVALID) stays a deny.
  if (decision.mode === 'audit' && decision.wouldHave !== undefined) return withProvenance({ action: 'observe', outcome, detections, reason: 'policy.observed' }, provenance);
  const action = ACTION_OF[decision.effect];
  const payload: JsonValue | undefined = decision.effect === 'rewrite' ? decision.rewrittenInput : undefined;
  return withProvenance({ action, outcome, detections, reason: reasonOf(decision), ...(payload === undefined ? {} : { payload }) }, provenance);
}

/**
 * The gatekeeper as a `tool-args` guardrail. Identity comes from the port's trusted context
 * (agent, tenant, actor, run) and `options.environment`; the tool arguments are only `input`.
 */
export function gatekeeperGuardrail(gatekeeper: Gatekeeper, options: GatekeeperGuardrailOptions = {}): Guardrail {
  assertGatekeeperOptions('gatekeeperGuardrail', options, ['name', 'environment']);
  const declared = declaredUnder(gatekeeper);
  return Object.freeze({
    name: options.name ?? 'gatekeeper',
    placements: Object.freeze(['tool-args'] as const),
    // A getter: a new bundle brings new policy ids and a new version to name.
    get detections() {
      return declared();
    },
    check(input: GuardrailInput): GatekeeperVerdict {
      const bundle = gatekeeper.version();
      try {
        if (input.placement !== 'tool-args' || input.tool === undefined) {
          return withProvenance(
            { action: 'deny', outcome: 'partial', detections: ['gatekeeper.deny', bundleDetection(bundle), 'gatekeeper.fault:GATEKEEPER.NO_TOOL_CALL'], reason: 'policy.wrong-placement' },
            { effect: 'deny', mode: gatekeeper.mode, bundle, fault: 'GATEKEEPER.NO_TOOL_CALL' },
          );
        }
        const c = input.context;
        const decision = gatekeeper.evaluate({
          identity: {
            ...(c.agentId === undefined ? {} : { agent: c.agentId }),
            ...(c.tenant === undefined ? {} : { tenant: c.tenant }),
            ...(c.actor === undefined ? {} : { actor: c.actor }),
            ...(c.runId === undefined ? {} : { runId: c.runId }),
            ...(options.environment === undefined ? {} : { environment: options.environment }),
          },
          call: { tool: input.tool.id },
          input: input.value,
        });
        return verdictOf(decision);
      } catch {
        return withProvenance(
          { action: 'deny', outcome: 'partial', detections: ['gatekeeper.deny', bundleDetection(bundle), 'gatekeeper.fault:GATEKEEPER.EVALUATION_FAILED'], reason: 'policy.fault' },
          { effect: 'deny', mode: gatekeeper.mode, bundle, fault: 'GATEKEEPER.EVALUATION_FAILED' },
        );
      }
    },
  });
}
