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

export interface CallerViewOptions {
  /** This call's step gate: a refused step ends the caller's stream. */
  readonly gate: StepGate;
  /** Judges a tool's arguments or result for the caller (the policy engine's `judgeShown`). */
  readonly judgeShown: (value: unknown) => Promise<{ shown: true; value: unknown } | { shown: false }>;
  /** Stops the run (a refusal found here). */
  readonly stop: () => void;
}

type Payload = Record<string, unknown>;
type Shape = (payload: Payload) => Payload | Promise<Payload>;

const MODEL_FIELDS = ['id', 'timestamp', 'modelId', 'modelVersion', 'modelProvider', 'modelMetadata'] as const;
const TRIPWIRE_METADATA = ['code', 'policy', 'phase', 'channel', 'guardrail', 'placement'] as const;
// Chunks after which the run produces nothing more.
const RUN_STOPS: ReadonlySet<string> = new Set(['error', 'abort', 'tripwire']);

const ids = (...keys: string[]): Shape => (payload) => pick(payload, keys);
const same: Shape = (payload) => payload;

/** A `step-finish`/`finish` payload without the step's text, steps, messages, request or tool calls. */
const stepEnd: Shape = (payload) => {
  const kept = pick(payload, ['id', 'messageId', 'stepResult', 'totalUsage', 'processorRetryCount']);
  const output = record(payload['output']);
  if (output && 'usage' in output) kept['output'] = { usage: output['usage'] };
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

const errorName: Shape = (payload) => {
  const error = payload['error'];
  const name = error instanceof Error ? error.name : typeof record(error)?.['name'] === 'string' ? (record(error)!['name'] as string) : 'Error';
  return { error: { name, message: 'The agent run failed' } };
};

/**
 * The caller's stream. `source` is the guarded run's stream with text already judged (after the
 * hold, when there is one).
 */
export function callerView(source: ReadableStream<ChunkType>, options: CallerViewOptions): ReadableStream<ChunkType> {
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
    'response-metadata': ids(...MODEL_FIELDS),
    'text-start': ids('id'),
    'text-delta': ids('id', 'text'),
    'text-end': ids('id'),
    'reasoning-start': ids('id'),
    'reasoning-delta': ids('id', 'text'),
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
  const reader = source.getReader();
  let done = false;
  const end = (controller: ReadableStreamDefaultController<ChunkType>, last?: ChunkType): void => {
    done = true;
    const refusal = options.gate.refused;
    options.gate.close();
    if (refusal && last?.type !== 'tripwire') {
      options.stop();
      controller.enqueue({
        type: 'tripwire',
        runId: last?.runId,
        from: last?.from,
        payload: { reason: refusal.reason, processorId: STEP_GATE_PROCESSOR_ID, metadata: { code: refusal.code } },
      } as ChunkType);
    }
    controller.close();
    void reader.cancel().catch(() => undefined);
  };
  return new ReadableStream<ChunkType>({
    async pull(controller) {
      while (!done) {
        let next: Awaited<ReturnType<typeof reader.read>>;
        try {
          next = await reader.read();
        } catch (error) {
          done = true;
          options.gate.close();
          controller.error(error);
          return;
        }
        if (next.done) return end(controller);
        const chunk = next.value;
        // A refused step's tools did not run: what follows it (their refusals, the step's end) is not shown.
        if (options.gate.refused && !RUN_STOPS.has(chunk.type)) return end(controller, chunk);
        const shape = shapes[chunk.type];
        if (shape === undefined) continue;
        const payload = record((chunk as { payload?: unknown }).payload) ?? {};
        controller.enqueue({ type: chunk.type, runId: chunk.runId, from: chunk.from, payload: await shape(payload) } as ChunkType);
        if (RUN_STOPS.has(chunk.type)) return end(controller, chunk);
        return;
      }
    },
    cancel(reason) {
      done = true;
      options.gate.close();
      return reader.cancel(reason);
    },
  });
}

function record(value: unknown): Payload | undefined {
  return value !== null && typeof value === 'object' && !Array.isArray(value) ? (value as Payload) : undefined;
}

function pick(from: Payload, keys: readonly string[]): Payload {
  const out: Payload = {};
  for (const key of keys) if (Object.hasOwn(from, key)) out[key] = from[key];
  return out;
}
