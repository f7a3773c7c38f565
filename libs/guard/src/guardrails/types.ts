import { type JsonValue } from '@gatehouse/contracts';
import { type GuardrailReasonCode } from './reasons.js';

/**
 * Where a guardrail runs. `pre-prompt`: the caller's input before the model sees it;
 * `post-model`: the model's answer before the caller sees it; `tool-args`: a tool call's
 * arguments before the tool runs; `tool-result`: a tool's result before the model sees it;
 * `egress`: an outbound request a connector is about to send.
 */
export type GuardrailPlacement = 'pre-prompt' | 'post-model' | 'tool-args' | 'tool-result' | 'egress';
export const GUARDRAIL_PLACEMENTS: readonly GuardrailPlacement[] = Object.freeze(['pre-prompt', 'post-model', 'tool-args', 'tool-result', 'egress']);

/**
 * What a guardrail decides. `allow`: nothing to say; `observe`: recorded, not enforced; `mask`
 * and `rewrite`: the verdict's `payload` replaces the value and continues (the original never
 * reaches the handler or the record); `deny`: refused; `approve`: parked on a person, even when
 * the tool did not ask for approval; `halt`: the agent loop ends.
 */
export type GuardrailAction = 'allow' | 'observe' | 'mask' | 'rewrite' | 'deny' | 'approve' | 'halt';

/**
 * How the check went: `complete` (the guardrail judged the whole value), `partial` (it could
 * not: it threw, timed out, or saw only part of the value), `failed` (the check itself failed
 * outright: its verdict could not be recorded or read back, the value was not JSON, or the
 * guardrail said so). Nothing treats `partial` as allow; a `failed` verdict denies (or halts).
 */
export type GuardrailOutcome = 'complete' | 'partial' | 'failed';

export interface GuardrailVerdict {
  readonly action: GuardrailAction;
  readonly outcome: GuardrailOutcome;
  /**
   * Names of what was detected (`pii.email`, `schema.required`), never the detected text: names
   * the guardrail declared (`Guardrail.detections`); any other is recorded as `undeclared`.
   */
  readonly detections: readonly string[];
  /**
   * A code of the reason catalogue (`GUARDRAIL_REASONS`: `limit.exceeded`, `pii.detected`, ...).
   * Records, refusals and tripwires show only the code's fixed sentence. Any other string is
   * accepted and dropped: the record then shows the action's sentence (`refused by a guardrail`).
   */
  readonly reason?: GuardrailReasonCode | (string & Record<never, never>);
  /** The replacement value for `mask` and `rewrite`. */
  readonly payload?: JsonValue;
}

/**
 * A detection as the runner reads it: a name, or `{ rule, detected }` (Duraton's form: the rule's
 * name, and whether it found anything; `detected: false` names nothing). A `GuardrailVerdict` names
 * only; a guardrail typed as Duraton's (`@gatehouse/guard/compat/duraton`) may answer either.
 */
export type GuardrailDetectionReport = string | { readonly rule: string; readonly detected: boolean };


/** The value a guardrail judges at one placement, with the trusted context it runs in. */
export interface GuardrailInput {
  readonly placement: GuardrailPlacement;
  /** Text (prompts, answers) or JSON (tool arguments and results, egress requests). */
  readonly value: JsonValue;
  /** For tool placements: the tool's id and its input JSON Schema when known. */
  readonly tool?: { readonly id: string; readonly inputSchema?: Readonly<Record<string, JsonValue>> };
  /** Trusted identity from request context (never from the value): agent, tenant, actor, run. */
  readonly context: {
    readonly agentId?: string;
    readonly tenant?: string;
    readonly actor?: { readonly id: string; readonly role: string };
    readonly runId?: string;
  };
  /** Aborted when the call the guardrail races is over, or a sibling tripped. */
  readonly signal: AbortSignal;
}

/** The port every guardrail implements: a name, the placements it understands, and a check. */
export interface Guardrail {
  readonly name: string;
  readonly placements: readonly GuardrailPlacement[];
  /**
   * Every detection name the guardrail may report (letters, digits and `. _ : @ / -`), fixed by its
   * configuration, never by a value it judged. The runner reads it with each verdict and records
   * any other name as one `undeclared` marker. Absent: verdicts stand, but name nothing. A
   * guardrail whose rules change at run time (the gatekeeper, on a new bundle) may declare
   * through a getter.
   */
  readonly detections?: readonly string[];
  check(input: GuardrailInput): GuardrailVerdict | Promise<GuardrailVerdict>;
}
