// The gatekeeper's decision in HazelJS's shape (`outcome`, `policyIds`, `reason`, `code`), with the
// engine's own decision beside it (`gatehouse`: bundle version, fault, rule, mode).
import { type JsonValue } from '@gatehouse/contracts';
import { type GatekeeperDecision } from '@gatehouse/gatekeeper';
import { type CompiledHazelPolicies, type GatekeeperErrorCode } from '@gatehouse/gatekeeper/hazeljs';

export type GatekeeperOutcome = 'allow' | 'deny' | 'require_approval' | 'rewrite';

/** HazelJS's `GatekeeperDecision`, plus the engine's decision it was mapped from. */
export interface HazelGatekeeperDecision {
  readonly outcome: GatekeeperOutcome;
  /** The HazelJS policy that decided (empty for the default and for disabled mode). */
  readonly policyIds: readonly string[];
  /** A static reason, safe for logs (no input content). */
  readonly reason: string;
  /** For `deny`: why (`HAZELJS.DENIED`, `HAZELJS.DEFAULT_DENY`, `HAZELJS.POLICY` for a fault, `HAZELJS.VALIDATION` for a malformed call). */
  readonly code?: GatekeeperErrorCode;
  /** For `rewrite`: the input the tool gets. */
  readonly safeInput?: JsonValue;
  /** In audit mode: what enforce mode would have decided (the outcome itself is then `allow`). */
  readonly wouldHave?: GatekeeperOutcome;
  readonly gatehouse: GatekeeperDecision;
}

// Faults of the call itself (the engine denies them in audit mode too).
const STRUCTURAL: ReadonlySet<string> = new Set(['GATEKEEPER.CALL_INVALID', 'GATEKEEPER.INPUT_TOO_DEEP']);

type Judged = Pick<GatekeeperDecision, 'effect' | 'policyId' | 'fault' | 'rewrittenInput'>;

function enforced(judged: Judged, origins: CompiledHazelPolicies['origins']): Omit<HazelGatekeeperDecision, 'gatehouse' | 'wouldHave'> {
  const origin = judged.policyId === undefined ? undefined : origins.get(judged.policyId);
  const policyIds = origin?.id === undefined ? [] : [origin.id];
  switch (judged.effect) {
    case 'deny':
      if (judged.fault !== undefined && STRUCTURAL.has(judged.fault)) return { outcome: 'deny', policyIds, reason: 'the call is malformed', code: 'HAZELJS.VALIDATION' };
      if (judged.fault !== undefined) return { outcome: 'deny', policyIds, reason: 'policy evaluation failed (fail closed)', code: 'HAZELJS.POLICY' };
      if (origin === undefined) return { outcome: 'deny', policyIds, reason: 'no applicable allow policy (default deny)', code: 'HAZELJS.DEFAULT_DENY' };
      return { outcome: 'deny', policyIds, reason: origin.kind === 'allow-failed' ? 'allow predicate failed' : 'denied by policy', code: 'HAZELJS.DENIED' };
    case 'require-approval':
      return { outcome: 'require_approval', policyIds, reason: 'approval required by policy' };
    case 'rewrite':
      return { outcome: 'rewrite', policyIds, reason: 'input rewritten by policy', ...(judged.rewrittenInput === undefined ? {} : { safeInput: judged.rewrittenInput }) };
    case 'allow':
      return origin?.kind === 'default' ? { outcome: 'allow', policyIds: [], reason: 'default allow' } : { outcome: 'allow', policyIds, reason: 'allowed by policy' };
    default: {
      const unreachable: never = judged.effect;
      return unreachable;
    }
  }
}

/** Maps an engine decision (any mode) to HazelJS's decision shape. */
export function hazelDecisionOf(decision: GatekeeperDecision, origins: CompiledHazelPolicies['origins']): HazelGatekeeperDecision {
  if (decision.mode === 'disabled') return Object.freeze({ outcome: 'allow', policyIds: [], reason: 'gatekeeper disabled', gatehouse: decision });
  const judged = enforced(decision.wouldHave ?? decision, origins);
  if (decision.wouldHave === undefined) return Object.freeze({ ...judged, gatehouse: decision });
  return Object.freeze({ outcome: 'allow', policyIds: judged.policyIds, reason: 'audit mode: recorded, not enforced', wouldHave: judged.outcome, gatehouse: decision });
}
