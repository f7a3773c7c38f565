import { type JsonValue } from '@gatehouse/contracts';
import { type AuditLogger } from '../audit/audit-logger.js';
import { recordGuardrailDecision } from './audit-guardrail.js';
import { type GuardrailDecision, isJsonValue, isTrip, runGuardrails, validateGuardrails } from './run-guardrails.js';
import { type Guardrail, type GuardrailInput, type GuardrailPlacement, type GuardrailVerdict } from './types.js';

/** What to check: a placement and a value (and the tool, for tool placements). */
export interface CheckSubject {
  readonly placement: GuardrailPlacement;
  readonly value: JsonValue;
  readonly tool?: GuardrailInput['tool'];
}

export interface CheckOptions<T> {
  /** The guardrails to ask, in order; the first verdict that is not allow wins. */
  readonly guardrails: readonly Guardrail[];
  /** Checked before the call (or beside it, with `parallel`). */
  readonly input?: CheckSubject;
  /** Derives what to check from the call's result; omitted, nothing is checked afterwards. */
  readonly output?: (result: T) => CheckSubject;
  /**
   * The guarded call. It gets an AbortSignal (aborted when a parallel input check trips) and the
   * input value as it continues (the replacement under mask/rewrite). Omitted, `check` judges only.
   */
  readonly call?: (signal: AbortSignal, value: JsonValue | undefined) => T | Promise<T>;
  /** Race the input check against the call instead of gating the call on it. */
  readonly parallel?: boolean;
  /** Trusted identity for the guardrails (never from the value). */
  readonly context?: GuardrailInput['context'];
  /** Cancels the checks and the call. */
  readonly signal?: AbortSignal;
  /** Where decisions are recorded (boundary `guardrail`, resource `check:<name>`). */
  readonly audit?: AuditLogger;
  /** Deadline of one guardrail check, ms (default 5000). */
  readonly timeoutMs?: number;
}

/** The outcome of `check`. A trip is a value, never a throw. */
export interface CheckResult<T> {
  readonly name: string;
  /** True when the check refused to clear: deny, approve, halt, or a fault. mask/rewrite/observe do not trip. */
  readonly tripped: boolean;
  /** The verdict that decided: the output check's when it ran, else the input check's. */
  readonly verdict: GuardrailVerdict;
  /** Name of the deciding guardrail, absent when all allowed. */
  readonly by: string | undefined;
  /** Which check decided. */
  readonly stage: 'input' | 'output' | undefined;
  /** The value to use in place of the one offered (the replacement under mask/rewrite); absent when tripped. */
  readonly value?: JsonValue;
  /** The call's own return; absent when no call was given or when a check tripped. */
  readonly result?: T;
  /** True when a parallel input check tripped and the call was aborted. */
  readonly cancelled: boolean;
}

const ALLOW_ALL: GuardrailDecision = Object.freeze({ verdict: Object.freeze({ action: 'allow', outcome: 'complete', detections: Object.freeze([]) }), by: undefined, ran: Object.freeze([]) });
const OPTION_FIELDS = new Set(['guardrails', 'input', 'output', 'call', 'parallel', 'context', 'signal', 'audit', 'timeoutMs']);

function validateSubject(subject: unknown, where: string): CheckSubject {
  if (subject === null || typeof subject !== 'object') throw new TypeError(`${where} must be { placement, value }`);
  const { placement, value } = subject as Partial<CheckSubject>;
  if (!['pre-prompt', 'post-model', 'tool-args', 'tool-result', 'egress'].includes(placement as string)) throw new TypeError(`${where}.placement is not a guardrail placement`);
  if (!isJsonValue(value)) throw new TypeError(`${where}.value must be JSON`);
  return subject as CheckSubject;
}

/** The value that continues after a decision: the payload under mask/rewrite, else the value as given. */
function continuing(decision: GuardrailDecision, value: JsonValue): JsonValue {
  const { action, payload } = decision.verdict;
  return (action === 'mask' || action === 'rewrite') && payload !== undefined ? payload : value;
}

/**
 * Applies the guardrail port to any value or call. Input is checked before the call (or beside it with
 * `parallel: true`, aborting the call through its AbortSignal on a trip), output after it. A trip is
 * returned, never thrown: the caller reads `tripped`. The call's own error propagates, unless the call
 * was aborted by a trip.
 */
export async function check<T = unknown>(name: string, options: CheckOptions<T>): Promise<CheckResult<T>> {
  if (typeof name !== 'string' || name.length === 0 || name.length > 128) throw new TypeError('check: name must be a non-empty string');
  if (options === null || typeof options !== 'object') throw new TypeError('check: options are required');
  const extra = Object.keys(options).filter((k) => !OPTION_FIELDS.has(k));
  if (extra.length > 0) throw new TypeError(`check: unknown option ${extra.map((k) => `"${k}"`).join(', ')}`);
  const guardrails = validateGuardrails(options.guardrails, 'check');
  const input = options.input === undefined ? undefined : validateSubject(options.input, 'check: input');
  if (options.output !== undefined && typeof options.output !== 'function') throw new TypeError('check: output must be a function of the result');
  if (options.call !== undefined && typeof options.call !== 'function') throw new TypeError('check: call must be a function');
  if (options.parallel !== undefined && typeof options.parallel !== 'boolean') throw new TypeError('check: parallel must be a boolean');
  if (options.parallel === true && (options.call === undefined || input === undefined)) throw new TypeError('check: parallel needs both input and call');
  if (options.output !== undefined && options.call === undefined) throw new TypeError('check: output needs a call');
  const outer = options.signal ?? new AbortController().signal;
  const context = options.context ?? {};
  const resource = `check:${name}`;

  const judge = async (subject: CheckSubject, signal: AbortSignal): Promise<GuardrailDecision> => {
    const decision = await runGuardrails(guardrails, { placement: subject.placement, value: subject.value, ...(subject.tool ? { tool: subject.tool } : {}), context, signal }, options.timeoutMs === undefined ? {} : { timeoutMs: options.timeoutMs });
    if (decision.ran.length === 0) return decision;
    const recorded = await recordGuardrailDecision(options.audit, decision, { placement: subject.placement, resource, detail: { check: name } });
    // A decision that could not be recorded where it must be does not clear anything.
    if (!recorded) return { verdict: { action: 'deny', outcome: 'partial', detections: [], reason: 'guardrail.unrecorded' }, by: decision.by, ran: decision.ran, fault: 'threw' };
    return decision;
  };
  const tripped = (decision: GuardrailDecision, stage: 'input' | 'output', cancelled = false): CheckResult<T> =>
    Object.freeze({ name, tripped: true, verdict: decision.verdict, by: decision.by, stage, cancelled });

  // No call: a plain evaluation of the value.
  if (options.call === undefined) {
    const decision = input ? await judge(input, outer) : ALLOW_ALL;
    if (isTrip(decision.verdict)) return tripped(decision, 'input');
    return Object.freeze({ name, tripped: false, verdict: decision.verdict, by: decision.by, stage: input ? 'input' : undefined, cancelled: false, ...(input ? { value: continuing(decision, input.value) } : {}) });
  }

  const call = options.call;
  const controller = new AbortController();
  const callSignal = AbortSignal.any([outer, controller.signal]);
  let inputDecision = ALLOW_ALL;
  let result: T;
  if (options.parallel === true && input) {
    const running = Promise.resolve().then(() => call(callSignal, input.value));
    // Settled either way, so an aborted call's rejection is never unhandled.
    const settled = running.then((value) => ({ ok: true as const, value }), (error: unknown) => ({ ok: false as const, error }));
    inputDecision = await judge(input, outer);
    if (isTrip(inputDecision.verdict) || inputDecision.verdict.action === 'mask' || inputDecision.verdict.action === 'rewrite') {
      // A replacement arrived after the call had already started with the original: that call is thrown away too.
      controller.abort();
      return tripped(inputDecision, 'input', true);
    }
    const outcome = await settled;
    if (!outcome.ok) throw outcome.error;
    result = outcome.value;
  } else {
    if (input) {
      inputDecision = await judge(input, outer);
      if (isTrip(inputDecision.verdict)) return tripped(inputDecision, 'input');
    }
    result = await call(callSignal, input ? continuing(inputDecision, input.value) : undefined);
  }

  const inputValue = input ? { value: continuing(inputDecision, input.value) } : {};
  if (options.output === undefined) {
    return Object.freeze({ name, tripped: false, verdict: inputDecision.verdict, by: inputDecision.by, stage: input ? 'input' : undefined, cancelled: false, ...inputValue, result });
  }
  const subject = validateSubject(options.output(result), 'check: output()');
  const outputDecision = await judge(subject, outer);
  if (isTrip(outputDecision.verdict)) return tripped(outputDecision, 'output');
  // The input check cleared; the output check decides, and its replacement is the value to use.
  const decided = outputDecision.by === undefined ? inputDecision : outputDecision;
  return Object.freeze({
    name,
    tripped: false,
    verdict: decided.verdict,
    by: decided.by,
    stage: outputDecision.by === undefined ? (input ? 'input' : 'output') : 'output',
    cancelled: false,
    value: continuing(outputDecision, subject.value),
    result,
  });
}
