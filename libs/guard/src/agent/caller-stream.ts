// What the caller of a guarded `stream()` receives: a list of what may be shown, chunk type by
// chunk type, never a list of what is hidden. Text and reasoning were judged by the content
// policies (and the `post-model` hold) before they get here. Everything else Mastra streams
// carries content nothing judged for the caller: tool arguments as the model writes them
// (`tool-call-delta`), whole arguments and results (`tool-call`, `tool-result`, approvals,
// suspensions), the step's text, messages and request again (`step-start`, `step-finish`,
// `finish`), provider bytes (`raw`), errors whose messages may quote a provider or a tool, and
// the output of nested agents, workflows and tools (`tool-output`, `data-*`, `workflow-*`).
//
// So: argument deltas are dropped (the whole call follows); a tool call's arguments and a tool's
// result are judged by the output policies of the answer channel and shown only when they pass
// (otherwise the chunk keeps its ids and `withheld: true`); step and finish chunks keep ids,
// reasons, usage and model names; an error keeps its name only; a chunk type not listed here is
// dropped, so a type a later Mastra adds stays hidden until it is judged safe. When the step gate
// refused a step (its tools did not run), the stream ends there with a `tripwire` chunk.
import { type ChunkType } from '@mastra/core/stream';
import { type StepGate, STEP_GATE_PROCESSOR_ID } from './step-gate.js';
import { pipeStages, RUN_STOPS, type StreamStage } from './stream-stages.js';

export interface CallerViewOptions {
  /** This call's step gate: a refused step ends the caller's stream. */
  readonly gate: StepGate;
  /** The agent's tool names: a tool name the model wrote that is not one of them is not shown. */
  readonly toolNames?: ReadonlySet<string>;
  /** Judges a tool's arguments or result for the caller (the policy engine's `judgeShown`). */
  readonly judgeShown: (value: unknown) => Promise<{ shown: true; value: unknown } | { shown: false }>;
  /** Stops the run (a refusal found here). */
  readonly stop: () => void;
}

type Payload = Record<string, unknown>;
type Shape = (payload: Payload) => Payload | Promise<Payload>;

// Model facts of the configured model; the provider's response id and model name are not kept.
const MODEL_FIELDS = ['timestamp', 'modelVersion', 'modelProvider'] as const;
// Bidirectional overrides make letters render in another order than they are written: a phrase
// written backwards inside one reads forwards. They are removed from what the caller is shown.
const OVERRIDES = /[\u202D\u202E]/g;
const HAS_OVERRIDE = /[\u202D\u202E]/;
const TRIPWIRE_METADATA = ['code', 'policy', 'phase', 'channel', 'guardrail', 'placement'] as const;

const ids = (...keys: string[]): Shape => (payload) => pick(payload, keys);
const same: Shape = (payload) => payload;
// The most frequent chunk by far: built directly rather than through `pick`.
const textDelta: Shape = (payload) => {
  const text = payload['text'];
  return { id: payload['id'], text: typeof text === 'string' && HAS_OVERRIDE.test(text) ? text.replace(OVERRIDES, '') : text };
};

const FINISH_REASONS: ReadonlySet<string> = new Set(['stop', 'length', 'content-filter', 'tool-calls', 'error', 'other', 'abort', 'tripwire', 'suspended']);

/** A finish reason from the known set ('other' for anything a provider or model made up). */
export function knownFinishReason(reason: unknown): string {
  return typeof reason === 'string' && FINISH_REASONS.has(reason) ? reason : 'other';
}

// Token counts only: a provider's `raw` usage is its own to fill.
function counts(usage: unknown): Payload | undefined {
  const from = record(usage);
  if (from === undefined) return undefined;
  const out: Payload = {};
  for (const [key, value] of Object.entries(from)) if (typeof value === 'number' && Number.isFinite(value)) out[key] = value;
  return out;
}

/** A `step-finish`/`finish` payload without the step's text, steps, messages, request, tool calls or raw provider fields. */
const stepEnd: Shape = (payload) => {
  const kept = pick(payload, ['id', 'messageId', 'processorRetryCount']);
  const step = record(payload['stepResult']);
  if (step) kept['stepResult'] = { reason: knownFinishReason(step['reason']), ...(typeof step['isContinued'] === 'boolean' ? { isContinued: step['isContinued'] } : {}) };
  const total = counts(payload['totalUsage']);
  if (total) kept['totalUsage'] = total;
  const output = record(payload['output']);
  const usage = counts(output?.['usage']);
  if (usage) kept['output'] = { usage };
  for (const field of ['metadata', 'response']) {
    const nested = record(payload[field]);
    if (nested) kept[field] = pick(nested, MODEL_FIELDS);
  }
  return kept;
};

const tripwire: Shape = (payload) => {
  const metadata = record(payload['metadata']);
  return {
    ...pick(payload, ['reason', 'processorId', 'retry']),
    ...(metadata ? { metadata: pick(metadata, TRIPWIRE_METADATA) } : {}),
  };
};

// An error's name and message are a provider's or a tool's to choose: neither is shown.
const errorName: Shape = () => ({ error: { name: 'Error', message: 'The agent run failed' } });

/**
 * The caller's view as a stage of the guarded stream: `source` chunks are the guarded run's with
 * text already judged (after the hold, when there is one). It is done after a chunk that stops
 * the run, or once the step gate refused a step (it then adds the tripwire itself).
 */
export function createCallerView(options: CallerViewOptions): StreamStage {
  // A tool's content, judged: shown as it is (a canonical copy), or replaced by `withheld: true`.
  const judged = (field: string, keys: string[]): Shape => async (payload) => {
    const kept = pick(payload, keys);
    if (!(field in payload)) return kept;
    const verdict = await options.judgeShown(payload[field]);
    return verdict.shown ? { ...kept, [field]: verdict.value } : { ...kept, withheld: true };
  };
  const shapes: Readonly<Record<string, Shape>> = {
    start: ids('id', 'messageId'),
    'step-start': ids('messageId', 'startedAt'),
    'text-start': ids('id'),
    'text-delta': textDelta,
    'text-end': ids('id'),
    'reasoning-start': ids('id'),
    'reasoning-delta': textDelta,
    'reasoning-end': ids('id'),
    'tool-call-input-streaming-start': ids('toolCallId', 'toolName'),
    'tool-call-input-streaming-end': ids('toolCallId'),
    'tool-call': judged('args', ['toolCallId', 'toolName', 'providerExecuted']),
    'tool-result': judged('result', ['toolCallId', 'toolName', 'isError', 'providerExecuted']),
    'tool-error': ids('toolCallId', 'toolName'),
    'tool-call-approval': judged('args', ['toolCallId', 'toolName']),
    'tool-call-suspended': ids('toolCallId', 'toolName'),
    'step-finish': stepEnd,
    finish: stepEnd,
    tripwire,
    error: errorName,
    abort: same,
  };
  let done = false;
  let last: ChunkType | undefined;
  // Block ids and tool call ids come from the provider or the model: the caller gets ids of this
  // call's own, the same for the same original, so its chunks still pair up.
  const aliases = new Map<string, string>();
  const alias = (kind: string, value: unknown): string => {
    const key = `${kind}:${String(value)}`;
    let id = aliases.get(key);
    if (id === undefined) {
      id = `${kind}-${aliases.size + 1}`;
      aliases.set(key, id);
    }
    return id;
  };
  const renamed = (payload: Payload): Payload => {
    const out = { ...payload };
    if ('id' in out) out['id'] = alias('b', out['id']);
    if ('toolCallId' in out) out['toolCallId'] = alias('call', out['toolCallId']);
    if ('toolName' in out && !(typeof out['toolName'] === 'string' && options.toolNames?.has(out['toolName']))) out['toolName'] = 'unknown';
    return out;
  };
  // The end of the caller's stream: the step gate's tripwire when it refused a step and no tripwire came.
  const close = (): ChunkType[] => {
    done = true;
    const refusal = options.gate.refused;
    options.gate.close();
    if (!refusal || last?.type === 'tripwire') return [];
    options.stop();
    return [{ type: 'tripwire', runId: last?.runId, from: last?.from, payload: { reason: refusal.reason, processorId: STEP_GATE_PROCESSOR_ID, metadata: { code: refusal.code } } } as ChunkType];
  };
  return {
    get done() {
      return done;
    },
    push(chunk) {
      // A refused step's tools did not run: what follows it (their refusals, the step's end) is not shown.
      if (options.gate.refused && !RUN_STOPS.has(chunk.type)) return close();
      // The most frequent chunk by far, built in one go.
      if (chunk.type === 'text-delta' || chunk.type === 'reasoning-delta') {
        const payload = textDelta(record((chunk as { payload?: unknown }).payload) ?? {}) as Payload;
        payload['id'] = alias('b', payload['id']);
        last = { type: chunk.type, runId: chunk.runId, from: chunk.from, payload } as unknown as ChunkType;
        return [last];
      }
      const shape = shapes[chunk.type];
      if (shape === undefined) return [];
      const emit = (shown: Payload): ChunkType[] => {
        const payload = chunk.type === 'step-finish' || chunk.type === 'finish' || chunk.type === 'start' || chunk.type === 'step-start' ? shown : renamed(shown);
        const out = { type: chunk.type, runId: chunk.runId, from: chunk.from, payload } as ChunkType;
        last = out;
        return RUN_STOPS.has(chunk.type) ? [out, ...close()] : [out];
      };
      const shaped = shape(record((chunk as { payload?: unknown }).payload) ?? {});
      return shaped instanceof Promise ? shaped.then(emit) : emit(shaped);
    },
    end: close,
    abandon() {
      done = true;
      options.gate.close();
    },
  };
}

/** `source` through the caller's view on its own (the guarded agent pumps it with the other stages). */
export function callerView(source: ReadableStream<ChunkType>, options: CallerViewOptions): ReadableStream<ChunkType> {
  return pipeStages(source, [createCallerView(options)]);
}

function record(value: unknown): Payload | undefined {
  return value !== null && typeof value === 'object' && !Array.isArray(value) ? (value as Payload) : undefined;
}

function pick(from: Payload, keys: readonly string[]): Payload {
  const out: Payload = {};
  for (const key of keys) if (Object.hasOwn(from, key)) out[key] = from[key];
  return out;
}
