// No tool runs before the model step that asked for it has been judged whole.
//
// Mastra 1.71 starts a server tool as soon as its `tool-call` part is streamed (eager
// execution), and even without it runs the step's tools while a judge outside its own
// processors (a `post-model` guardrail over the held answer) may still be deciding; an `abort`
// from `processOutputStep` does not stop the step's tools either. So the guard does not rely on
// Mastra's scheduling: every tool the guarded agent hands to Mastra is wrapped, and the wrapper
// waits for this call's step gate to admit its tool call id. Only `StepGateProcessor`
// (`processLLMResponse`, after the model's step has streamed and before Mastra runs a tool of it)
// admits ids, and only after the step's text passed its judges. A refusal, an abort, the end of
// the run, or a step that ends without naming the call settles every waiting call as refused,
// and the tool body never runs.
import { type ProcessInputArgs, type ProcessLLMResponseArgs, type Processor } from '@mastra/core/processors';
import { RequestContext } from '@mastra/core/request-context';

/** Why a step was refused: a stable code and a static reason, never the judged content. */
export interface StepRefusal {
  readonly code: string;
  readonly reason: string;
}

/** A tool call's verdict: admitted, or refused with the run's refusal. */
export type StepAdmission = { readonly admitted: true } | { readonly admitted: false; readonly refusal: StepRefusal };

/** What a refused tool call returns to Mastra as its result (the body did not run). */
export interface StepGateRefusal {
  readonly valid: false;
  readonly tool: string;
  readonly error: string;
  readonly code: string;
}

/** What a step wrote so far in the run: its answer text and its reasoning (every step's, in order). */
export interface StepText {
  readonly answer: string;
  readonly reasoning: string;
}

/** Judges the run's text up to the end of a step, before that step's tools run; resolves to a refusal or undefined (passed). */
export type StepJudge = (text: StepText, args: ProcessLLMResponseArgs) => Promise<StepRefusal | undefined>;

const NOT_JUDGED: StepRefusal = Object.freeze({ code: 'STEP.NOT_JUDGED', reason: 'Tool call was not part of a judged step' });
const RUN_ENDED: StepRefusal = Object.freeze({ code: 'STEP.RUN_ENDED', reason: 'The run ended before the tool call was judged' });
const NO_GATE: StepRefusal = Object.freeze({ code: 'STEP.NO_GATE', reason: 'Tool call outside a guarded run' });
const JUDGE_FAULT: StepRefusal = Object.freeze({ code: 'STEP.JUDGE_FAILED', reason: 'Step evaluation failed' });

interface Waiter {
  settled: boolean;
  readonly settle: (admission: StepAdmission) => void;
  readonly promise: Promise<StepAdmission>;
}

/** One guarded call's gate: tool calls wait here until their step is judged. */
export class StepGate {
  // By tool call id: a verdict waited for, or given and not yet claimed by its call.
  private readonly verdicts = new Map<string, Waiter>();
  private refusal: StepRefusal | undefined;
  private closed = false;
  // The run's text so far: a phrase or a key may start in one step and end in the next.
  private answer = '';
  private reasoning = '';

  /** `onRefused` is told once, at the first refusal (the guarded agent stops the run). */
  constructor(private readonly onRefused: (refusal: StepRefusal) => void = () => undefined) {}

  /** The run's refusal, once one of its steps was refused. */
  get refused(): StepRefusal | undefined {
    return this.refusal;
  }

  /** Adds a step's text to the run's and returns the run's text so far. */
  wrote(step: StepText): StepText {
    this.answer += step.answer;
    this.reasoning += step.reasoning;
    return { answer: this.answer, reasoning: this.reasoning };
  }

  /** Calls waiting for a verdict now. */
  get waiting(): number {
    let count = 0;
    for (const waiter of this.verdicts.values()) if (!waiter.settled) count += 1;
    return count;
  }

  /** Waits for the verdict on `toolCallId`; a verdict is claimed once (a later step must admit the id again). */
  async admission(toolCallId: string): Promise<StepAdmission> {
    if (this.refusal) return { admitted: false, refusal: this.refusal };
    if (this.closed) return { admitted: false, refusal: RUN_ENDED };
    const waiter = this.waiter(toolCallId);
    const admission = await waiter.promise;
    if (this.verdicts.get(toolCallId) === waiter) this.verdicts.delete(toolCallId);
    return admission;
  }

  /** The step that names these calls passed its judges: admit them; refuse every other waiting call. */
  admit(toolCallIds: readonly string[]): void {
    if (this.refusal || this.closed) return;
    const named = new Set(toolCallIds);
    for (const [id, waiter] of this.verdicts) {
      if (named.has(id)) continue;
      // Waiting, yet not named by the step that just ended: never judged. Given and unclaimed: stale.
      if (!waiter.settled) waiter.settle({ admitted: false, refusal: NOT_JUDGED });
      this.verdicts.delete(id);
    }
    for (const id of named) this.waiter(id).settle({ admitted: true });
  }

  /** Refuses the run: every waiting and every later call is refused. The first refusal stands. */
  refuse(refusal: StepRefusal): void {
    const first = this.refusal === undefined;
    this.refusal ??= refusal;
    this.settleAll(this.refusal);
    if (first) this.onRefused(this.refusal);
  }

  /** The run ended (or was aborted): a call still waiting was never judged, and none comes later. */
  close(): void {
    this.closed = true;
    this.settleAll(this.refusal ?? RUN_ENDED);
  }

  private settleAll(refusal: StepRefusal): void {
    for (const waiter of this.verdicts.values()) waiter.settle({ admitted: false, refusal });
    this.verdicts.clear();
  }

  private waiter(toolCallId: string): Waiter {
    let waiter = this.verdicts.get(toolCallId);
    if (!waiter) {
      let resolve!: (admission: StepAdmission) => void;
      const promise = new Promise<StepAdmission>((r) => (resolve = r));
      const created: Waiter = {
        settled: false,
        promise,
        settle: (admission) => {
          if (created.settled) return;
          created.settled = true;
          resolve(admission);
        },
      };
      waiter = created;
      this.verdicts.set(toolCallId, waiter);
    }
    return waiter;
  }
}

// Keyed by the per-call RequestContext the guarded agent hands to Mastra: nothing a tool can read.
const gates = new WeakMap<object, StepGate>();

/** A fresh copy of the caller's context for one call, with a step gate of its own. */
export function openStepGate(callerContext: RequestContext, onRefused?: (refusal: StepRefusal) => void): { requestContext: RequestContext; gate: StepGate } {
  const requestContext = new RequestContext() as RequestContext;
  for (const [key, value] of callerContext.entries()) requestContext.set(key, value);
  const gate = new StepGate(onRefused);
  gates.set(requestContext, gate);
  return { requestContext, gate };
}

/** Registers `gate` on a context the guarded agent derived for the same call. */
export function shareStepGate(requestContext: RequestContext, gate: StepGate): void {
  gates.set(requestContext, gate);
}

export function stepGateOf(requestContext: unknown): StepGate | undefined {
  return requestContext !== null && typeof requestContext === 'object' ? gates.get(requestContext) : undefined;
}

// Tool hooks Mastra calls while the model is still writing the call, before any verdict.
const EARLY_HOOKS = ['onInputStart', 'onInputDelta', 'onInputAvailable'] as const;

interface ToolLike {
  readonly id?: unknown;
  execute?: (input: unknown, context: unknown) => unknown;
}

/**
 * Each tool with an `execute` that first waits for its call's admission. The copy keeps the
 * tool's prototype and fields (schemas, approval flags), so Mastra treats it as the same tool.
 * A tool with hooks that run on the streamed arguments is refused: they would run before the verdict.
 */
export function gateTools(tools: Record<string, unknown>, where: string): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(tools)) {
    const tool = value as ToolLike;
    if (tool === null || typeof tool !== 'object' || typeof tool.execute !== 'function') {
      throw new TypeError(`${where}: tool "${key}" has no execute function to guard`);
    }
    const early = EARLY_HOOKS.filter((hook) => typeof (tool as Record<string, unknown>)[hook] === 'function');
    if (early.length > 0) throw new TypeError(`${where}: tool "${key}" has ${early.join(', ')}, which would run before its step is judged`);
    const name = typeof tool.id === 'string' && tool.id.length > 0 ? tool.id : key;
    const execute = tool.execute.bind(tool);
    const gated = async (input: unknown, context: unknown): Promise<unknown> => {
      const ctx = (context ?? {}) as { requestContext?: unknown; agent?: { toolCallId?: unknown }; abortSignal?: unknown };
      const gate = stepGateOf(ctx.requestContext);
      const toolCallId = ctx.agent?.toolCallId;
      const signal = ctx.abortSignal instanceof AbortSignal ? ctx.abortSignal : undefined;
      const admission = gate === undefined || typeof toolCallId !== 'string' ? { admitted: false as const, refusal: NO_GATE } : await untilAborted(gate.admission(toolCallId), signal);
      if (!admission.admitted) return refusedCall(name, admission.refusal);
      return execute(input, context);
    };
    const copy = Object.assign(Object.create(Object.getPrototypeOf(tool) as object) as object, tool, { execute: gated });
    out[key] = copy;
  }
  return out;
}

// An aborted call stops waiting: refused, since its step was never admitted.
function untilAborted(admission: Promise<StepAdmission>, signal: AbortSignal | undefined): Promise<StepAdmission> {
  if (signal === undefined) return admission;
  const aborted: StepAdmission = { admitted: false, refusal: RUN_ENDED };
  if (signal.aborted) return Promise.resolve(aborted);
  return new Promise<StepAdmission>((resolve) => {
    const onAbort = () => resolve(aborted);
    signal.addEventListener('abort', onAbort, { once: true });
    void admission.then((value) => {
      signal.removeEventListener('abort', onAbort);
      resolve(value);
    });
  });
}

function refusedCall(tool: string, refusal: StepRefusal): StepGateRefusal {
  return Object.freeze({ valid: false, tool, error: `tool call "${tool}" refused: ${refusal.reason}`, code: refusal.code });
}

export const STEP_GATE_PROCESSOR_ID = 'gatehouse-step-gate';

/**
 * The step gate's Mastra hook: `processLLMResponse` of an input processor, which Mastra calls with
 * the step's chunks after the model's step has streamed and before it runs any tool of it (having
 * one also turns Mastra's eager tool execution off, so in practice a tool is not even started
 * early). `judge` reads the step's text whole; the step's tool calls are admitted only when it
 * passes. A refusal refuses every call of the run, and `onRefused` stops it.
 */
export class StepGateProcessor implements Processor<typeof STEP_GATE_PROCESSOR_ID> {
  readonly id = STEP_GATE_PROCESSOR_ID;
  readonly name = 'gatehouse step gate';

  constructor(private readonly judge: StepJudge) {}

  async processInput(args: ProcessInputArgs): Promise<ProcessInputArgs['messages']> {
    return args.messages;
  }

  async processLLMResponse(args: ProcessLLMResponseArgs): Promise<undefined> {
    const gate = stepGateOf(args.requestContext);
    if (!gate) return undefined; // no gate: every call refuses itself (NO_GATE)
    const { answer, reasoning, toolCallIds, interleaved } = stepOf(args.chunks);
    const text = gate.wrote({ answer, reasoning });
    let refusal: StepRefusal | undefined;
    try {
      refusal = gate.refused ?? (interleaved ? INTERLEAVED : await this.judge(text, args));
    } catch {
      refusal = JUDGE_FAULT;
    }
    if (refusal) gate.refuse(refusal);
    else gate.admit(toolCallIds);
    return undefined;
  }
}

// The step's text and reasoning (their deltas, in order) and the ids of the tool calls it made;
// `interleaved` when two blocks of one channel were written at once (the stream refuses those).
function stepOf(chunks: readonly unknown[]): { answer: string; reasoning: string; toolCallIds: string[]; interleaved: boolean } {
  let answer = '';
  let reasoning = '';
  let interleaved = false;
  const open: Record<'answer' | 'reasoning', unknown> = { answer: undefined, reasoning: undefined };
  const toolCallIds: string[] = [];
  for (const chunk of chunks) {
    const { type, payload } = (chunk ?? {}) as { type?: unknown; payload?: { id?: unknown; text?: unknown; toolCallId?: unknown } };
    const channel = type === 'text-delta' || type === 'text-end' ? 'answer' : type === 'reasoning-delta' || type === 'reasoning-end' ? 'reasoning' : undefined;
    if (channel !== undefined && (type === 'text-end' || type === 'reasoning-end')) {
      if (open[channel] === payload?.id) open[channel] = undefined;
    } else if (channel !== undefined && typeof payload?.text === 'string') {
      if (open[channel] !== undefined && open[channel] !== payload.id) interleaved = true;
      open[channel] = payload.id;
      if (channel === 'answer') answer += payload.text;
      else reasoning += payload.text;
    } else if (type === 'tool-call' && typeof payload?.toolCallId === 'string') toolCallIds.push(payload.toolCallId);
  }
  return { answer, reasoning, toolCallIds, interleaved };
}

const INTERLEAVED: StepRefusal = Object.freeze({ code: 'STEP.INTERLEAVED_BLOCKS', reason: 'Step text could not be judged in one order' });
