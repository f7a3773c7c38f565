import { GatehouseError, isJsonValue, type JsonValue, readOptions } from '@gatehouse/contracts';
import { type AuditLogger } from '../audit/audit-logger.js';
import { guardrailReasonCode, recordGuardrailDecision } from './audit-guardrail.js';
import { failedDecision, type GuardrailDecision, isTrip, runGuardrails, validateGuardrails } from './run-guardrails.js';
import { GUARDRAIL_PLACEMENTS, type Guardrail, type GuardrailInput, type GuardrailPlacement, type GuardrailVerdict } from './types.js';
import { judgeOnce, validateJournal, type VerdictJournal } from './verdict-journal.js';

/**
 * What to check: a placement and a value, and for tool placements the tool, as gatehouse's
 * `{ id, inputSchema }` or as a name with its input schema beside it (`schema`, Duraton's form).
 */
export interface CheckSubject {
  readonly placement: GuardrailPlacement;
  readonly value: JsonValue;
  readonly tool?: GuardrailInput['tool'] | string;
  /** The tool's input JSON Schema, when `tool` is given as a name. */
  readonly schema?: Readonly<Record<string, JsonValue>>;
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
  /** Trusted identity for the guardrails (never from the value); `runId` binds journaled verdicts. */
  readonly context?: GuardrailInput['context'];
  /** Cancels the checks and the call. */
  readonly signal?: AbortSignal;
  /** Where decisions are recorded (boundary `guardrail`, resource `check:<name>`). */
  readonly audit?: AuditLogger;
  /** Deadline of one guardrail check, ms (default 5000). */
  readonly timeoutMs?: number;
  /**
   * Records each verdict as a step of the run (`context.runId`, required with it): a resumed run
   * reads a recorded verdict back instead of asking the guardrails again.
   */
  readonly journal?: VerdictJournal;
}

/** The outcome of `check`. A trip is a value, never a throw; only a halt throws (`GuardrailHaltError`). */
export interface CheckResult<T> {
  readonly name: string;
  /** True when the check refused to clear: deny, approve, or a fault. mask/rewrite/observe do not trip. */
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

/**
 * A `halt` verdict in `check`: there is no loop to end, so the check fails (not retryable: the
 * verdict is a decision, and with a journal a resumed run reads the same halt back).
 */
export class GuardrailHaltError extends GatehouseError {
  /** The halting verdict (names and a catalogue code, never content). */
  readonly verdict: GuardrailVerdict;
  readonly by: string | undefined;
  readonly stage: 'input' | 'output';

  constructor(check: string, decision: GuardrailDecision, stage: 'input' | 'output') {
    super('GUARDRAIL.HALTED', 'a guardrail halted the check', {
      category: 'security',
      retryable: false,
      details: { check, guardrail: decision.by ?? 'guardrail', stage, reasonCode: guardrailReasonCode(decision) },
    });
    this.name = 'GuardrailHaltError';
    this.verdict = decision.verdict;
    this.by = decision.by;
    this.stage = stage;
  }
}

const ALLOW_ALL: GuardrailDecision = Object.freeze({ verdict: Object.freeze({ action: 'allow', outcome: 'complete', detections: Object.freeze([]) }), by: undefined, ran: Object.freeze([]) });
const OPTIONS = ['guardrails', 'input', 'output', 'call', 'parallel', 'context', 'signal', 'audit', 'timeoutMs', 'journal'];
type Stage = 'input' | 'output';

/** The subject as the runner takes it: the tool as `{ id, inputSchema }` whichever form it came in. */
function validateSubject(subject: unknown, where: string): { placement: GuardrailPlacement; value: JsonValue; tool?: GuardrailInput['tool'] } {
  if (subject === null || typeof subject !== 'object' || Array.isArray(subject)) throw new TypeError(`${where} must be { placement, value }`);
  const { placement, value, tool, schema } = readOptions(where, subject, ['placement', 'value', 'tool', 'schema']);
  if (!GUARDRAIL_PLACEMENTS.includes(placement as GuardrailPlacement)) throw new TypeError(`${where}.placement is not a guardrail placement`);
  if (!isJsonValue(value)) throw new TypeError(`${where}.value must be JSON`);
  const base = { placement: placement as GuardrailPlacement, value };
  if (schema !== undefined && (schema === null || typeof schema !== 'object' || Array.isArray(schema) || !isJsonValue(schema))) throw new TypeError(`${where}.schema must be a JSON Schema object`);
  if (tool === undefined) {
    if (schema !== undefined) throw new TypeError(`${where}.schema needs a tool name`);
    return base;
  }
  if (typeof tool === 'string') {
    if (tool.length === 0 || tool.length > 128) throw new TypeError(`${where}.tool must be a tool name of 1 to 128 characters`);
    return { ...base, tool: { id: tool, ...(schema === undefined ? {} : { inputSchema: schema as Record<string, JsonValue> }) } };
  }
  const { id, inputSchema } = (tool ?? {}) as { id?: unknown; inputSchema?: unknown };
  if (tool === null || typeof tool !== 'object' || typeof id !== 'string' || id.length === 0) throw new TypeError(`${where}.tool must be a tool name or { id, inputSchema }`);
  if (schema !== undefined) throw new TypeError(`${where}.schema is given with the tool name only, not beside a tool object`);
  if (inputSchema !== undefined && !isJsonValue(inputSchema)) throw new TypeError(`${where}.tool.inputSchema must be JSON`);
  return { ...base, tool: tool as GuardrailInput['tool'] };
}

/** The value that continues after a decision: the payload under mask/rewrite, else the value as given. */
function continuing(decision: GuardrailDecision, value: JsonValue): JsonValue {
  const { action, payload } = decision.verdict;
  return (action === 'mask' || action === 'rewrite') && payload !== undefined ? payload : value;
}

function readCheckOptions<T>(name: unknown, options: CheckOptions<T>) {
  if (typeof name !== 'string' || name.length === 0 || name.length > 128) throw new TypeError('check: name must be a non-empty string');
  if (options === null || typeof options !== 'object') throw new TypeError('check: options are required');
  readOptions('check', options, OPTIONS);
  const guardrails = validateGuardrails(options.guardrails, 'check');
  const input = options.input === undefined ? undefined : validateSubject(options.input, 'check: input');
  if (options.output !== undefined && typeof options.output !== 'function') throw new TypeError('check: output must be a function of the result');
  if (options.call !== undefined && typeof options.call !== 'function') throw new TypeError('check: call must be a function');
  if (options.parallel !== undefined && typeof options.parallel !== 'boolean') throw new TypeError('check: parallel must be a boolean');
  if (options.parallel === true && (options.call === undefined || input === undefined)) throw new TypeError('check: parallel needs both input and call');
  if (options.output !== undefined && options.call === undefined) throw new TypeError('check: output needs a call');
  const journal = options.journal === undefined ? undefined : validateJournal(options.journal, 'check');
  const context = options.context ?? {};
  if (journal && (typeof context.runId !== 'string' || context.runId.length === 0)) throw new TypeError('check: journal needs context.runId, the run its verdicts belong to');
  return { guardrails, input, journal, context };
}

/**
 * Applies the guardrail port to any value or call. Input is checked before the call (or beside it with
 * `parallel: true`, aborting the call through its AbortSignal on a trip), output after it. A trip is
 * returned, never thrown: the caller reads `tripped`. A `halt` throws `GuardrailHaltError` (after the
 * call is aborted, when it runs beside the check). The call's own error propagates, unless the call was
 * aborted by a trip. With a `journal`, each check's verdict is a step of the run: a resumed run reads it back.
 */
export async function check<T = unknown>(name: string, options: CheckOptions<T>): Promise<CheckResult<T>> {
  const { guardrails, input, journal, context } = readCheckOptions(name, options);
  const outer = options.signal ?? new AbortController().signal;
  const resource = `check:${name}`;

  const judge = async (subject: ReturnType<typeof validateSubject>, signal: AbortSignal, stage: Stage): Promise<GuardrailDecision> => {
    const binding = journal ? { runId: context.runId as string, tenant: context.tenant, agentId: context.agentId, placement: subject.placement, step: `check:${name}:${stage}`, value: subject.value, tool: subject.tool } : undefined;
    const { decision, replayed } = await judgeOnce(journal, binding, guardrails, () =>
      runGuardrails(guardrails, { ...subject, context, signal }, options.timeoutMs === undefined ? {} : { timeoutMs: options.timeoutMs }));
    if (decision.ran.length === 0 && !decision.fault) return decision;
    const recorded = await recordGuardrailDecision(options.audit, decision, { placement: subject.placement, resource, detail: { check: name, ...(replayed ? { replayed: true } : {}) } });
    // A decision that could not be recorded where it must be does not clear anything.
    return recorded ? decision : failedDecision('guardrail.unrecorded', decision.by, decision.ran);
  };
  const tripped = (decision: GuardrailDecision, stage: Stage, cancelled = false): CheckResult<T> => {
    if (decision.verdict.action === 'halt') throw new GuardrailHaltError(name, decision, stage);
    return Object.freeze({ name, tripped: true, verdict: decision.verdict, by: decision.by, stage, cancelled });
  };

  // No call: a plain evaluation of the value.
  if (options.call === undefined) {
    const decision = input ? await judge(input, outer, 'input') : ALLOW_ALL;
    if (isTrip(decision.verdict)) return tripped(decision, 'input');
    return Object.freeze({ name, tripped: false, verdict: decision.verdict, by: decision.by, stage: input ? 'input' : undefined, cancelled: false, ...(input ? { value: continuing(decision, input.value) } : {}) });
  }
  return guardedCall(options, input, outer, judge, tripped, name);
}

type Judge = (subject: ReturnType<typeof validateSubject>, signal: AbortSignal, stage: Stage) => Promise<GuardrailDecision>;

/** The call between its checks (or beside its input check, with `parallel`). */
async function guardedCall<T>(
  options: CheckOptions<T>,
  input: ReturnType<typeof validateSubject> | undefined,
  outer: AbortSignal,
  judge: Judge,
  tripped: (decision: GuardrailDecision, stage: Stage, cancelled?: boolean) => CheckResult<T>,
  name: string,
): Promise<CheckResult<T>> {
  const call = options.call!;
  const controller = new AbortController();
  const callSignal = AbortSignal.any([outer, controller.signal]);
  let inputDecision = ALLOW_ALL;
  let result: T;
  if (options.parallel === true && input) {
    const running = Promise.resolve().then(() => call(callSignal, input.value));
    // Settled either way, so an aborted call's rejection is never unhandled.
    const settled = running.then((value) => ({ ok: true as const, value }), (error: unknown) => ({ ok: false as const, error }));
    inputDecision = await judge(input, outer, 'input');
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
      inputDecision = await judge(input, outer, 'input');
      if (isTrip(inputDecision.verdict)) return tripped(inputDecision, 'input');
    }
    result = await call(callSignal, input ? continuing(inputDecision, input.value) : undefined);
  }

  const inputValue = input ? { value: continuing(inputDecision, input.value) } : {};
  if (options.output === undefined) {
    return Object.freeze({ name, tripped: false, verdict: inputDecision.verdict, by: inputDecision.by, stage: input ? 'input' : undefined, cancelled: false, ...inputValue, result });
  }
  const subject = validateSubject(options.output(result), 'check: output()');
  const outputDecision = await judge(subject, outer, 'output');
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
