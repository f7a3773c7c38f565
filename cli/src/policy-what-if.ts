// `gatehouse policy what-if --bundle <candidate> --from <time>`: replays the gatekeeper decisions
// recorded on the audit topic under a candidate bundle and reports, decision by decision, what
// would change. It reads the log and computes; it executes no tool, creates no approval and
// writes nothing.
//
// A record never holds the tool arguments (the audit trail carries no inspected content), so a
// decision is re-made from its trusted facts only (agent, tenant, actor, tool; the environment
// from `--environment`): where the candidate's outcome could depend on the arguments, the row
// says `undetermined` and names the policy that reads them, rather than guess.
import { DecisionRecordedV1, type TopicEvent } from '@gatehouse/contracts';
import { type FactsDecision, type Gatekeeper, type GatekeeperEffect } from '@gatehouse/gatekeeper';

/** A gatekeeper decision as the audit topic recorded it. */
export interface RecordedDecision {
  readonly decisionId: string;
  readonly time: string;
  readonly tenant: string;
  readonly agentId?: string;
  readonly actor?: { readonly id: string; readonly role: string };
  readonly toolId: string;
  /** The effect recorded (in audit mode: what enforce mode would have done, where recorded). */
  readonly effect: GatekeeperEffect;
  /** `<policySetId>@<revision>` it was made under. */
  readonly bundle: string;
}

export type WhatIfChange = 'newly-denied' | 'newly-allowed' | 'newly-approval-gated' | 'unchanged' | 'undetermined';

export interface WhatIfRow {
  readonly decision: RecordedDecision;
  readonly change: WhatIfChange;
  /** The candidate's effect; absent when undetermined. */
  readonly candidate?: GatekeeperEffect;
  /** The candidate policy that decided, or (undetermined) the one that reads the arguments. */
  readonly policyId?: string;
}

export interface WhatIfReport {
  readonly candidate: string;
  readonly from: string;
  readonly decisions: number;
  readonly counts: Readonly<Record<WhatIfChange, number>>;
  /** Every row that is not `unchanged`, in log order. */
  readonly rows: readonly WhatIfRow[];
}

const EFFECT_OF_CODE: Readonly<Record<string, GatekeeperEffect>> = {
  'POLICY.ALLOW': 'allow',
  'POLICY.DENY': 'deny',
  'POLICY.REQUIRE_APPROVAL': 'require-approval',
  'POLICY.REWRITE': 'rewrite',
};
const EFFECTS: readonly GatekeeperEffect[] = ['allow', 'deny', 'require-approval', 'rewrite'];

/**
 * The gatekeeper decision an audit event records, if it is one: a decision about a tool that
 * names the bundle it was made under (the contract's `policy` reference): the policy service's
 * (boundary `policy`, its effect in the code) and the guard's gatekeeper guardrail's at
 * `tool-args` (boundary `guardrail`, its effect in the `gatekeeper.<effect>` detection).
 */
export function recordedGatekeeperDecision(event: unknown): RecordedDecision | undefined {
  const parsed = DecisionRecordedV1.safeParse(event);
  if (!parsed.success) return undefined;
  const e: TopicEvent<'audit'> = parsed.data;
  const p = e.payload;
  if (p.toolId === undefined || p.policy === undefined) return undefined;
  const effect =
    p.boundary === 'policy' ? EFFECT_OF_CODE[p.code] : p.boundary === 'guardrail' ? EFFECTS.find((candidate) => p.detections?.includes(`gatekeeper.${candidate}`)) : undefined;
  if (effect === undefined) return undefined;
  return {
    decisionId: p.decisionId,
    time: e.time,
    tenant: e.tenant,
    ...(p.agentId === undefined ? {} : { agentId: p.agentId }),
    ...(p.actor === undefined ? {} : { actor: { id: p.actor.id, role: p.actor.role } }),
    toolId: p.toolId,
    effect,
    bundle: `${p.policy.bundleId}@${p.policy.revision}`,
  };
}

/** How the candidate's decision compares with the recorded one. */
export function changeOf(recorded: GatekeeperEffect, candidate: FactsDecision): WhatIfChange {
  if (!candidate.determined) return 'undetermined';
  const passes = (effect: GatekeeperEffect) => effect === 'allow' || effect === 'rewrite';
  if (candidate.effect === recorded || (passes(candidate.effect) && passes(recorded))) return 'unchanged';
  if (candidate.effect === 'deny') return 'newly-denied';
  if (candidate.effect === 'require-approval') return 'newly-approval-gated';
  return 'newly-allowed';
}

/** Re-makes each recorded decision under `candidate` (from its facts) and tallies the changes. */
export function whatIf(candidate: Gatekeeper, recorded: readonly RecordedDecision[], options: { readonly environment?: string; readonly from: string }): WhatIfReport {
  const counts: Record<WhatIfChange, number> = { 'newly-denied': 0, 'newly-allowed': 0, 'newly-approval-gated': 0, unchanged: 0, undetermined: 0 };
  const rows: WhatIfRow[] = [];
  for (const decision of recorded) {
    const decided = candidate.decideFromFacts({
      identity: {
        tenant: decision.tenant,
        ...(decision.agentId === undefined ? {} : { agent: decision.agentId }),
        ...(decision.actor === undefined ? {} : { actor: decision.actor }),
        ...(options.environment === undefined ? {} : { environment: options.environment }),
      },
      call: { tool: decision.toolId },
    });
    const change = changeOf(decision.effect, decided);
    counts[change] += 1;
    if (change === 'unchanged') continue;
    rows.push({ decision, change, ...(decided.determined ? { candidate: decided.effect } : {}), ...(decided.policyId === undefined ? {} : { policyId: decided.policyId }) });
  }
  const version = candidate.version();
  return { candidate: `${version.policySetId}@${version.revision ?? 'candidate'}`, from: options.from, decisions: recorded.length, counts, rows };
}

/** The report for a terminal: a summary line, then one line per decision that would change. */
export function describeWhatIf(report: WhatIfReport): string {
  const c = report.counts;
  const lines = [
    `policy what-if: ${report.decisions} recorded decisions since ${report.from} under ${report.candidate}: ` +
      `${c['newly-denied']} newly denied, ${c['newly-allowed']} newly allowed, ${c['newly-approval-gated']} newly approval-gated, ${c.unchanged} unchanged, ${c.undetermined} undetermined without the arguments`,
  ];
  for (const row of report.rows) {
    const d = row.decision;
    const who = [d.agentId ?? '-', d.actor ? `${d.actor.role}:${d.actor.id}` : '-'].join(' ');
    const now = row.candidate ?? `? (policy ${row.policyId} reads the arguments)`;
    const by = row.candidate === undefined ? '' : row.policyId !== undefined ? ` by ${row.policyId}` : ' (no policy allows it)';
    lines.push(`  ${row.change.padEnd(20)} ${d.time} ${d.decisionId} ${d.toolId} [${who}] ${d.effect} under ${d.bundle} -> ${now}${by}`);
  }
  return lines.join('\n');
}
