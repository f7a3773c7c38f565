// `post-model` guardrails on a streamed answer. A guardrail judges text whole (a mask needs the
// whole address, a rewrite replaces the answer), so each text block of the stream is held back
// until its `text-end`, judged, and only then released: the judged text (masked or rewritten
// where the guardrail said so) as one `text-delta`, then the `text-end`. Nothing of a block is
// shown before its verdict. A refusal or a halt ends the stream with a `tripwire` chunk and
// aborts the run; the held text is dropped. Chunks that repeat the answer (`step-finish`, `finish`,
// `raw`) are reduced by the caller's view (caller-stream.ts), which reads this stream.
import { type ChunkType } from '@mastra/core/stream';
import { type PostModelOutcome } from '../guardrails/agent-guardrails.js';
import { pipeStages, RUN_STOPS, type StreamStage } from './stream-stages.js';

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

/** The hold as a stage of the guarded stream, with how it ended. */
export interface AnswerHoldStage extends StreamStage {
  readonly ended: Promise<HeldAnswerEnd>;
}

/**
 * Holds each text block until a judge has passed it. A block ends at its `text-end`: put the
 * text-end restorer before it, since a block without one is never judged and never shown.
 */
export function createAnswerHold(options: HoldAnswerOptions): AnswerHoldStage {
  const held = new Map<string, string[]>();
  let released = '';
  let stopped = false;
  let settle!: (end: HeldAnswerEnd) => void;
  const ended = new Promise<HeldAnswerEnd>((resolve) => (settle = resolve));

  // A refusal or halt: the held text is dropped, the run stopped, and a tripwire is the last chunk.
  const refuse = (stop: Exclude<HeldAnswerEnd, { kind: 'finished' }>, at: ChunkType): ChunkType[] => {
    held.clear();
    stopped = true;
    options.stop();
    settle(stop);
    const code = stop.kind === 'halted' ? 'GUARDRAIL.HALTED' : stop.code;
    return [{ type: 'tripwire', runId: at.runId, from: at.from, payload: { reason: stop.reason, processorId: options.processorId, metadata: { code, guardrail: stop.by } } } as ChunkType];
  };

  // Judges one held block and releases it: the judged text as one delta, then the block's end.
  const release = async (id: string, end: ChunkType): Promise<ChunkType[]> => {
    const text = (held.get(id) ?? []).join('');
    held.delete(id);
    let outcome: PostModelOutcome;
    try {
      outcome = await options.judge(text);
    } catch {
      outcome = { kind: 'refused', code: 'GUARDRAIL.FAULT', reason: FAULT_REASON, by: 'guardrail' };
    }
    if (outcome.kind !== 'pass') return refuse(outcome, end);
    if (outcome.text.length === 0) return [end];
    released += outcome.text;
    return [{ type: 'text-delta', runId: end.runId, from: end.from, payload: { id, text: outcome.text } } as ChunkType, end];
  };

  const finished = (): void => {
    // A block still held had no `text-end`: never judged, so never shown.
    held.clear();
    settle({ kind: 'finished', text: released });
  };

  return {
    ended,
    get done() {
      return stopped;
    },
    push(chunk) {
      const id = String(payloadOf(chunk)?.['id'] ?? '');
      switch (chunk.type) {
        case 'text-start':
          held.set(id, []);
          return [chunk];
        case 'text-delta': {
          const text = payloadOf(chunk)?.['text'];
          // A delta that is not text cannot be judged: refuse rather than pass it through unread.
          if (typeof text !== 'string') return refuse({ kind: 'refused', code: 'GUARDRAIL.FAULT', reason: FAULT_REASON, by: 'stream-reader' }, chunk);
          const parts = held.get(id) ?? [];
          parts.push(text);
          held.set(id, parts);
          return [];
        }
        case 'text-end':
          return release(id, chunk);
        default:
          // The run stopped: what is held was never judged and is never shown.
          if (RUN_STOPS.has(chunk.type)) held.clear();
          return [chunk];
      }
    },
    end() {
      finished();
      return [];
    },
    abandon: finished,
  };
}

/** `source` with every text block judged before it is released (the hold on its own). */
export function holdAnswer(source: ReadableStream<ChunkType>, options: HoldAnswerOptions): HeldAnswer {
  const hold = createAnswerHold(options);
  return { stream: pipeStages(source, [hold]), ended: hold.ended };
}

// A chunk's payload as a record (the object chunks have none).
function payloadOf(chunk: ChunkType): Record<string, unknown> | undefined {
  const payload = (chunk as { payload?: unknown }).payload;
  return payload !== null && typeof payload === 'object' && !Array.isArray(payload) ? (payload as Record<string, unknown>) : undefined;
}

/**
 * Closes every text block with its `text-end`. The content policies' hold-back releases a
 * block's held tail in place of its `text-end` (a Mastra processor returns one chunk per chunk);
 * a consumer that waits for the end of a block gets it back here, before the next chunk that is
 * not text (or the end of the stream), unless the run stopped (an `error`, `abort` or `tripwire`
 * chunk) first. Nothing is held: chunks pass as they come.
 */
export function createTextEndRestorer(): StreamStage {
  const open = new Map<string, ChunkType>();
  const closeOpen = (next: ChunkType | undefined): ChunkType[] => {
    const out: ChunkType[] = [];
    for (const [id, last] of open) out.push({ type: 'text-end', runId: next?.runId ?? last.runId, from: next?.from ?? last.from, payload: { id } } as ChunkType);
    open.clear();
    return out;
  };
  return {
    push(chunk) {
      const type = chunk.type;
      if (type === 'text-delta' || type === 'text-start') {
        const id = String(payloadOf(chunk)?.['id'] ?? '');
        if (!open.has(id)) open.set(id, chunk);
        return [chunk];
      }
      if (type === 'text-end') {
        open.delete(String(payloadOf(chunk)?.['id'] ?? ''));
        return [chunk];
      }
      // The run stopped: a block it cut short did not end, and is not closed.
      if (RUN_STOPS.has(type)) open.clear();
      else if (open.size > 0 && !type.startsWith('reasoning') && type !== 'response-metadata' && type !== 'raw') return [...closeOpen(chunk), chunk];
      return [chunk];
    },
    end() {
      return closeOpen(undefined);
    },
  };
}

/** `source` with every text block closed by its `text-end` (the restorer on its own). */
export function restoreTextEnds(source: ReadableStream<ChunkType>): ReadableStream<ChunkType> {
  return pipeStages(source, [createTextEndRestorer()]);
}
