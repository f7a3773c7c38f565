// A scripted language model for tests and benchmarks: no network, deterministic output,
// and a record of every prompt it received (to prove what did or did not reach it).
import { readOptions } from '@gatehouse/contracts';

const usage = {
  inputTokens: { total: 1, noCache: 1, cacheRead: 0, cacheWrite: 0 },
  outputTokens: { total: 1, text: 1, reasoning: 0 },
};

/** A tool call the model makes. */
export interface ScriptedToolCall {
  readonly toolName: string;
  readonly toolCallId: string;
  readonly args: unknown;
}

/** One model turn: text, a tool call, or several tool calls in the same turn. */
export type ScriptedStep = { readonly text: string } | { readonly toolCall: ScriptedToolCall } | { readonly toolCalls: readonly ScriptedToolCall[] };

export interface ScriptedModelOptions {
  /** Text `generate()` answers with. */
  readonly text?: string;
  /** Turns for `generate()`, one per model call; the last repeats. Overrides `text`. */
  readonly steps?: readonly ScriptedStep[];
  /** Text chunks `stream()` emits, in order. */
  readonly chunks?: readonly unknown[];
  /** Reasoning chunks emitted before the text when streaming. */
  readonly reasoning?: readonly string[];
  /**
   * Turns for `stream()`, one per model call (the last repeats), each a list of parts in the
   * order the model streams them. Overrides `chunks`. A turn with a tool call ends `tool-calls`.
   */
  readonly streamSteps?: readonly (readonly ScriptedStreamPart[])[];
  /** With `streamSteps`: wait this long before each part, as a provider's network would (default 0). */
  readonly partDelayMs?: number;
}

/** One part of a streamed turn: a text block (its deltas), a reasoning block, or a tool call (its argument deltas, then the call). */
export type ScriptedStreamPart =
  | { readonly text: readonly string[] }
  | { readonly reasoningText: readonly string[] }
  | { readonly call: ScriptedToolCall; readonly argDeltas?: readonly string[] };

// The V3 stream parts of one scripted turn.
function turnParts(turn: readonly ScriptedStreamPart[]): unknown[] {
  const parts: unknown[] = [{ type: 'stream-start', warnings: [] }];
  let calls = false;
  turn.forEach((part, index) => {
    const id = `p${index}`;
    if ('text' in part) {
      parts.push({ type: 'text-start', id }, ...part.text.map((delta) => ({ type: 'text-delta', id, delta })), { type: 'text-end', id });
    } else if ('reasoningText' in part) {
      parts.push({ type: 'reasoning-start', id }, ...part.reasoningText.map((delta) => ({ type: 'reasoning-delta', id, delta })), { type: 'reasoning-end', id });
    } else {
      calls = true;
      const { toolCallId, toolName, args } = part.call;
      const input = JSON.stringify(args);
      const deltas = part.argDeltas ?? [input];
      parts.push({ type: 'tool-input-start', id: toolCallId, toolName }, ...deltas.map((delta) => ({ type: 'tool-input-delta', id: toolCallId, delta })), { type: 'tool-input-end', id: toolCallId });
      parts.push({ type: 'tool-call', toolCallId, toolName, input });
    }
  });
  parts.push({ type: 'finish', finishReason: calls ? { unified: 'tool-calls', raw: 'tool_calls' } : { unified: 'stop', raw: 'stop' }, usage });
  return parts;
}

function delayedStream(parts: readonly unknown[], delayMs: number): ReadableStream<unknown> {
  let next = 0;
  return new ReadableStream({
    async pull(controller) {
      if (delayMs > 0) await new Promise((resolve) => setTimeout(resolve, delayMs));
      if (next < parts.length) controller.enqueue(parts[next++]);
      else controller.close();
    },
  });
}

export interface ScriptedModel {
  readonly specificationVersion: 'v3';
  readonly provider: string;
  readonly modelId: string;
  readonly supportedUrls: Record<string, RegExp[]>;
  /** Every prompt the model received, as JSON text. */
  readonly prompts: string[];
  doGenerate(options: { prompt: unknown }): Promise<unknown>;
  doStream(options: { prompt: unknown }): Promise<unknown>;
}

/** Builds a V3 model object that Mastra accepts as `model`. */
export function scriptedModel(options: ScriptedModelOptions = {}): ScriptedModel {
  readOptions('scriptedModel', options, ['text', 'steps', 'chunks', 'reasoning', 'streamSteps', 'partDelayMs']);
  const prompts: string[] = [];
  return {
    specificationVersion: 'v3',
    provider: 'gatehouse-test',
    modelId: 'scripted',
    // Every URL "supported": Mastra then passes asset URLs through instead of downloading them.
    supportedUrls: { '*/*': [/.*/] },
    prompts,
    async doGenerate({ prompt }) {
      prompts.push(JSON.stringify(prompt));
      const steps = options.steps;
      const step = steps && steps.length > 0 ? (steps[Math.min(prompts.length - 1, steps.length - 1)] as ScriptedStep) : { text: options.text ?? 'ok' };
      if ('toolCall' in step || 'toolCalls' in step) {
        const calls = 'toolCall' in step ? [step.toolCall] : step.toolCalls;
        return {
          content: calls.map(({ toolName, toolCallId, args }) => ({ type: 'tool-call', toolCallId, toolName, input: JSON.stringify(args) })),
          finishReason: { unified: 'tool-calls', raw: 'tool_calls' },
          usage,
          warnings: [],
        };
      }
      return { content: [{ type: 'text', text: step.text }], finishReason: { unified: 'stop', raw: 'stop' }, usage, warnings: [] };
    },
    async doStream({ prompt }) {
      prompts.push(JSON.stringify(prompt));
      const turns = options.streamSteps;
      if (turns && turns.length > 0) {
        const turn = turns[Math.min(prompts.length - 1, turns.length - 1)] as readonly ScriptedStreamPart[];
        return { stream: delayedStream(turnParts(turn), options.partDelayMs ?? 0) };
      }
      const chunks = options.chunks ?? [options.text ?? 'ok'];
      const reasoning = options.reasoning ?? [];
      return {
        stream: new ReadableStream({
          start(controller) {
            controller.enqueue({ type: 'stream-start', warnings: [] });
            if (reasoning.length > 0) {
              controller.enqueue({ type: 'reasoning-start', id: 'r1' });
              for (const delta of reasoning) controller.enqueue({ type: 'reasoning-delta', id: 'r1', delta });
              controller.enqueue({ type: 'reasoning-end', id: 'r1' });
            }
            controller.enqueue({ type: 'text-start', id: 't1' });
            for (const delta of chunks) controller.enqueue({ type: 'text-delta', id: 't1', delta });
            controller.enqueue({ type: 'text-end', id: 't1' });
            controller.enqueue({ type: 'finish', finishReason: { unified: 'stop', raw: 'stop' }, usage });
            controller.close();
          },
        }),
      };
    },
  };
}

/** Reads a stream to the end and returns the text of its text-delta chunks, in order. */
export async function collectStreamText(stream: ReadableStream<{ type: string; payload?: unknown }>): Promise<{ text: string; types: string[] }> {
  let text = '';
  const types: string[] = [];
  const reader = stream.getReader();
  for (;;) {
    const { value, done } = await reader.read();
    if (done) break;
    types.push(value.type);
    if (value.type === 'text-delta') text += String((value.payload as { text?: unknown } | undefined)?.text ?? '');
  }
  return { text, types };
}
