// Cedar (wasm, in process) as the gatekeeper bench's peer: the policy set is parsed once with
// `preparsePolicySet`, outside the timed loop, and each call is one `statefulIsAuthorized`
// request, as a host using Cedar for tool calls would make it. The context is built per call
// (the host has to), and the answer is read as the gatekeeper's three effects:
//   deny             — a satisfied forbid that stands for a deny rule;
//   require-approval — satisfied forbids, all of them approval rules;
//   allow            — Cedar permits (some permit held, no forbid did);
//   deny (default)   — nothing held.
// Cedar reports the determining policies of its decision, so one request per call is enough.
import { type JsonValue } from '@gatehouse/contracts';
import { preparsePolicySet, statefulIsAuthorized, type Context } from '@cedar-policy/cedar-wasm/nodejs';
import { type GatekeeperContext, type GatekeeperEffect } from '../gatekeeper/index.js';
import { type CedarRule } from './gatekeeper-bench-policies.js';

/** Cedar's answer in the gatekeeper's terms: the effect and the gatekeeper policies that determined it. */
export interface CedarDecision {
  readonly effect: GatekeeperEffect;
  readonly policyIds: readonly string[];
}

export interface CedarPeer {
  decide(ctx: GatekeeperContext): CedarDecision;
}

let policySets = 0;
/** The tool arguments the bench's policies read. */
const INPUT_FIELDS = ['amount', 'currency', 'debug'] as const;

/** The trusted facts and the tool arguments as one Cedar context; absent identity fields stay absent. */
function cedarContext(ctx: GatekeeperContext): Context {
  const { agent, tenant, actor } = ctx.identity;
  const input = ctx.input as Record<string, JsonValue>;
  return {
    tool: ctx.call.tool,
    ...(agent === undefined ? {} : { agent }),
    ...(tenant === undefined ? {} : { tenant }),
    ...(actor === undefined ? {} : { role: actor.role }),
    ...Object.fromEntries(INPUT_FIELDS.filter((field) => input[field] !== undefined).map((field) => [field, input[field]!])),
  };
}

function effectOf(decision: 'allow' | 'deny', determining: readonly CedarRule[]): GatekeeperEffect {
  if (decision === 'allow') return 'allow';
  if (determining.length > 0 && determining.every((rule) => rule.effect === 'require-approval')) return 'require-approval';
  return 'deny';
}

/** Parses `rules` once into Cedar's cache; throws when Cedar refuses the set (the bench cannot compare). */
export function cedarPeer(rules: Readonly<Record<string, CedarRule>>): CedarPeer {
  const id = `gatekeeper-bench-${++policySets}`;
  const staticPolicies = Object.fromEntries(Object.entries(rules).map(([ruleId, rule]) => [ruleId, rule.text]));
  const parsed = preparsePolicySet(id, { staticPolicies });
  if (parsed.type !== 'success') throw new Error(`cedar refused the bench policies: ${parsed.errors.map((e) => e.message).join('; ')}`);
  return {
    decide(ctx) {
      const answer = statefulIsAuthorized({
        principal: { type: 'Agent', id: ctx.identity.agent ?? '' },
        action: { type: 'Action', id: 'call' },
        resource: { type: 'Tool', id: ctx.call.tool },
        context: cedarContext(ctx),
        preparsedPolicySetId: id,
        entities: [],
      });
      if (answer.type !== 'success') throw new Error(`cedar failed: ${answer.errors.map((e) => e.message).join('; ')}`);
      const { decision, diagnostics } = answer.response;
      // An erroring policy is skipped by Cedar, as a failing match is by the gatekeeper; the bench's do not error.
      if (diagnostics.errors.length > 0) throw new Error(`cedar policy errors: ${diagnostics.errors.map((e) => `${e.policyId}: ${e.error.message}`).join('; ')}`);
      const determining = diagnostics.reason.map((ruleId) => rules[ruleId]!);
      return { effect: effectOf(decision, determining), policyIds: determining.map((rule) => rule.policyId) };
    },
  };
}
