// `post-model` guardrails on a streamed answer. A guardrail judges text whole (a mask needs the
// whole address, a rewrite replaces the answer), so each text block of the stream is held back
// until its `text-end`, judged, and only then released: the judged text (masked or rewritten
// where the guardrail said so) as one `text-delta`, then the `text-end`. Nothing of a block is
// shown before its verdict. A refusal or a halt ends the stream with a `tripwire` chunk and
// aborts the run; the held text is dropped. Chunks that repeat the answer (`step-finish`, `finish`,
// `raw`) are reduced by the caller's view (caller-stream.ts), which reads this stream.
import { type ChunkType } from '@mastra/core/stream';
import { type PostModelOutcome } from '../guardrails/agent-guardrails.js';

/** How a held stream ended, once it has. */
export type HeldAnswerEnd =
  | { readonly kind: 'finished'; readonly text: string }
  | { readonly kind: 'refused'; readonly code: string; readonly reason: string; readonly by: string }
  | { readonly kind: 'halted'; readonly reason: string; readonly by: string };

export interface HeldAnswer {
  /** The stream with every text block judged before it is released. */
  readonly stream: ReadableStream<ChunkType>;
  /** Settles when the stream has ended (read to its end, or refused). Never rejects. */
  readonly ended: Promise<HeldAnswerEnd>;
}

export interface HoldAnswerOptions {
  /** Judges one text block (the guarded agent's `judgeAnswer`). */
  readonly judge: (text: string) => Promise<PostModelOutcome>;
  /** Called once on a refusal or halt, before the tripwire chunk: stop the run. */
  readonly stop: () => void;
  /** The tripwire's processor id. */
  readonly processorId: string;
}

const FAULT_REASON = 'Guardrail evaluation failed';
// Chunks after which the run produces nothing more: a block still open was cut short.
const RUN_STOPS: ReadonlySet<string> = new Set(['error', 'abort', 'tripwire']);

/**
 * Holds each text block of `source` until a judge has passed it. A block ends at its `text-end`:
 * give it a stream whose blocks all have one (`restoreTextEnds`), since a block without one is
 * never judged and never shown.
 */
export function holdAnswer(source: ReadableStream<ChunkType>, options: HoldAnswerOptions): HeldAnswer {
  const held = new Map<string, string[]>();
  let released = '';
  let settle!: (end: HeldAnswerEnd) => void;
  const ended = new Promise<HeldAnswerEnd>((resolve) => (settle = resolve));
  const reader = source.getReader();

  type Step = { out: ChunkType[]; stop?: Exclude<HeldAnswerEnd, { kind: 'finished' }> };

  // Judges one held block and releases it: the judged text as one delta, then the block's end.
  const release = async (id: string, end: ChunkType): Promise<Step> => {
    const text = (held.get(id) ?? []).join('');
    held.delete(id);
    let outcome: PostModelOutcome;
    try {
      outcome = await options.judge(text);
    } catch {
      outcome = { kind: 'refused', code: 'GUARDRAIL.FAULT', reason: FAULT_REASON, by: 'guardrail' };
    }
    if (outcome.kind !== 'pass') return { out: [], stop: outcome };
    if (outcome.text.length === 0) return { out: [end] };
    released += outcome.text;
    return { out: [{ type: 'text-delta', runId: end.runId, from: end.from, payload: { id, text: outcome.text } } as ChunkType, end] };
  };

  // What one source chunk becomes: the chunks to release, and the end when it stops the stream.
  const step = async (chunk: ChunkType): Promise<Step> => {
    const id = String(payloadOf(chunk)?.['id'] ?? '');
    switch (chunk.type) {
      case 'text-start':
        held.set(id, []);
        return { out: [chunk] };
      case 'text-delta': {
        const text = payloadOf(chunk)?.['text'];
        // A delta that is not text cannot be judged: refuse rather than pass it through unread.
        if (typeof text !== 'string') return { out: [], stop: { kind: 'refused', code: 'GUARDRAIL.FAULT', reason: FAULT_REASON, by: 'stream-reader' } };
        const parts = held.get(id) ?? [];
        parts.push(text);
        held.set(id, parts);
        return { out: [] };
      }
      case 'text-end':
        return release(id, chunk);
      default:
        // The run stopped: what is held was never judged and is never shown.
        if (RUN_STOPS.has(chunk.type)) held.clear();
        return { out: [chunk] };
    }
  };

  const stream = new ReadableStream<ChunkType>({
    async pull(controller) {
      for (;;) {
        let next: Awaited<ReturnType<typeof reader.read>>;
        try {
          next = await reader.read();
        } catch (error) {
          // The run failed: what was held is dropped, what was released stands.
          held.clear();
          settle({ kind: 'finished', text: released });
          controller.error(error);
          return;
        }
        if (next.done) {
          // A block still held had no `text-end`: never judged, so never shown.
          held.clear();
          settle({ kind: 'finished', text: released });
          controller.close();
          return;
        }
        const { out, stop } = await step(next.value);
        if (stop) {
          held.clear();
          options.stop();
          const code = stop.kind === 'halted' ? 'GUARDRAIL.HALTED' : stop.code;
          controller.enqueue({
            type: 'tripwire',
            runId: next.value.runId,
            from: next.value.from,
            payload: { reason: stop.reason, processorId: options.processorId, metadata: { code, guardrail: stop.by } },
          } as ChunkType);
          settle(stop);
          controller.close();
          void reader.cancel().catch(() => undefined);
          return;
        }
        for (const chunk of out) controller.enqueue(chunk);
        if (out.length > 0) return;
      }
    },
    cancel(reason) {
      held.clear();
      settle({ kind: 'finished', text: released });
      return reader.cancel(reason);
    },
  });
  return { stream, ended };
}

// A chunk's payload as a record (the object chunks have none).
function payloadOf(chunk: ChunkType): Record<string, unknown> | undefined {
  const payload = (chunk as { payload?: unknown }).payload;
  return payload !== null && typeof payload === 'object' && !Array.isArray(payload) ? (payload as Record<string, unknown>) : undefined;
}

/**
 * The stream with every text block closed by its `text-end`. The content policies' hold-back
 * releases a block's held tail in place of its `text-end` (a Mastra processor returns one chunk
 * per chunk); a consumer that waits for the end of a block gets it back here, before the next
 * chunk that is not text (or the end of the stream), unless the run stopped (an `error`,
 * `abort` or `tripwire` chunk) first. Nothing is held: chunks pass as they come.
 */
export function restoreTextEnds(source: ReadableStream<ChunkType>): ReadableStream<ChunkType> {
  const open = new Map<string, ChunkType>();
  const closeOpen = (controller: TransformStreamDefaultController<ChunkType>, next: ChunkType | undefined): void => {
    for (const [id, last] of open) {
      controller.enqueue({ type: 'text-end', runId: next?.runId ?? last.runId, from: next?.from ?? last.from, payload: { id } } as ChunkType);
    }
    open.clear();
  };
  return source.pipeThrough(
    new TransformStream<ChunkType, ChunkType>({
      transform(chunk, controller) {
        const id = String(payloadOf(chunk)?.['id'] ?? '');
        if (chunk.type === 'text-start' || chunk.type === 'text-delta') open.set(id, chunk);
        else if (chunk.type === 'text-end') open.delete(id);
        // The run stopped: a block it cut short did not end, and is not closed.
        else if (RUN_STOPS.has(chunk.type)) open.clear();
        else if (open.size > 0 && !chunk.type.startsWith('reasoning') && chunk.type !== 'response-metadata' && chunk.type !== 'raw') closeOpen(controller, chunk);
        controller.enqueue(chunk);
      },
      flush(controller) {
        closeOpen(controller, undefined);
      },
    }),
  );
}
