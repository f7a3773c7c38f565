// The content policies on the guarded stream, as a stage of its one reader (stream-stages.ts)
// rather than a Mastra output processor: a processor that reads every chunk costs Mastra's
// per-chunk processor machinery on top of the judging, and here a stage may release a block's
// held tail and its end as two chunks. What the stage releases is what the policies passed;
// a refusal is recorded, the run is stopped, and a `tripwire` chunk is the stage's last.
import { type ChunkType } from '@mastra/core/stream';
import { type EvaluationOutcome } from '../policy-engine/evaluate.js';
import { leafText } from '../policy-engine/extract-text.js';
import { settle, type StreamJudge, type StreamVerdict } from '../policy-engine/stream-judge.js';
import { type OutputChannel } from '../policy-engine/types.js';
import { type StreamStage } from './stream-stages.js';

/** How the content stage ended: the answer text it released, or the refusal the caller was told. */
export type ContentEnd = { readonly kind: 'finished'; readonly text: string } | { readonly kind: 'refused'; readonly code: string; readonly reason: string };

export interface ContentStageOptions {
  readonly judge: StreamJudge;
  /** Records a refusal and returns the static reason and code (the engine's `recordStreamRefusal`). */
  readonly record: (channel: OutputChannel, outcome: Exclude<EvaluationOutcome, { kind: 'allowed' }>) => Promise<{ reason: string; code: string }>;
  /** Stops the run. */
  readonly stop: () => void;
  readonly signal: AbortSignal | undefined;
  /** The tripwire's processor id. */
  readonly processorId: string;
  /** Judges the whole output once the run ended (when no Mastra processor does): a refusal, or undefined. */
  readonly final?: (text: { answer: string; reasoning: string }) => Promise<{ reason: string; code: string } | undefined>;
}

export interface ContentStage extends StreamStage {
  readonly ended: Promise<ContentEnd>;
}

const CHANNEL_OF: Readonly<Record<string, { channel: OutputChannel; edge: 'delta' | 'end' }>> = {
  'text-delta': { channel: 'answer', edge: 'delta' },
  'text-end': { channel: 'answer', edge: 'end' },
  'reasoning-delta': { channel: 'reasoning', edge: 'delta' },
  'reasoning-end': { channel: 'reasoning', edge: 'end' },
};
const RUN_STOPS: ReadonlySet<string> = new Set(['error', 'abort', 'tripwire']);

export function createContentStage(options: ContentStageOptions): ContentStage {
  const { judge } = options;
  let released = '';
  let reasoning = '';
  // The arguments the model wrote into its tool calls: part of its output, judged with it at the end.
  const calls: string[] = [];
  let stopped = false;
  let finish!: (end: ContentEnd) => void;
  const ended = new Promise<ContentEnd>((resolve) => (finish = resolve));

  const refuse = async (channel: OutputChannel, outcome: Exclude<EvaluationOutcome, { kind: 'allowed' }>, at: ChunkType): Promise<ChunkType[]> => {
    judge.drop();
    stopped = true;
    const told = await options.record(channel, outcome);
    options.stop();
    finish({ kind: 'refused', ...told });
    const policy = outcome.kind === 'denied' ? { policy: outcome.policy } : {};
    return [{ type: 'tripwire', runId: at.runId, from: at.from, payload: { reason: told.reason, processorId: options.processorId, metadata: { code: told.code, ...policy, phase: 'output', channel } } } as ChunkType];
  };

  const delta = (chunk: ChunkType, channel: OutputChannel, id: unknown, text: string): ChunkType => {
    if (channel === 'answer') released += text;
    else reasoning += text;
    return { type: chunk.type === 'text-end' ? 'text-delta' : chunk.type === 'reasoning-end' ? 'reasoning-delta' : chunk.type, runId: chunk.runId, from: chunk.from, payload: { id, text } } as ChunkType;
  };

  const judged = (chunk: ChunkType, channel: OutputChannel, id: unknown, verdict: StreamVerdict, end: boolean): ChunkType[] | Promise<ChunkType[]> => {
    if (verdict.kind === 'refuse') return refuse(channel, verdict.outcome, chunk);
    if (verdict.text.length === 0) return end ? [chunk] : [];
    return end ? [delta(chunk, channel, id, verdict.text), chunk] : [delta(chunk, channel, id, verdict.text)];
  };

  return {
    ended,
    get done() {
      return stopped;
    },
    push(chunk) {
      const shape = CHANNEL_OF[chunk.type];
      if (chunk.type === 'tool-call' && options.final !== undefined) calls.push(leafText((chunk as { payload?: { args?: unknown } }).payload?.args ?? null) ?? '');
      if (shape === undefined) {
        // The run stopped: what is held was never judged whole and is never shown.
        if (RUN_STOPS.has(chunk.type)) judge.drop();
        return [chunk];
      }
      const payload = (chunk as { payload?: { id?: unknown; text?: unknown } }).payload ?? {};
      const id = String(payload.id ?? '');
      if (shape.edge === 'end') return settle(judge.end(shape.channel, id, options.signal), (verdict) => judged(chunk, shape.channel, payload.id, verdict, true));
      // A delta that is not text cannot be judged: refuse rather than pass it through unread.
      if (typeof payload.text !== 'string') return refuse(shape.channel, { kind: 'error', policy: 'stream-reader', code: 'POLICY.INVALID_DECISION' }, chunk);
      return settle(judge.delta(shape.channel, id, payload.text, options.signal), (verdict) => judged(chunk, shape.channel, payload.id, verdict, false));
    },
    async end() {
      judge.drop();
      const answer = calls.length === 0 ? released : [released, ...calls].join('\n');
      const refused = options.final === undefined ? undefined : await options.final({ answer, reasoning });
      if (refused === undefined) {
        finish({ kind: 'finished', text: released });
        return [];
      }
      // Everything was judged as it streamed; the whole can still refuse (a phrase across two blocks).
      stopped = true;
      finish({ kind: 'refused', ...refused });
      return [{ type: 'tripwire', payload: { reason: refused.reason, processorId: options.processorId, metadata: { code: refused.code, phase: 'output' } } } as unknown as ChunkType];
    },
    abandon() {
      judge.drop();
      finish({ kind: 'finished', text: released });
    },
  };
}
