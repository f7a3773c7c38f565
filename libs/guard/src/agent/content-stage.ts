// The content policies on the guarded stream, as a stage of its one reader (stream-stages.ts)
// rather than a Mastra output processor: a processor that reads every chunk costs Mastra's
// per-chunk processor machinery on top of the judging, and here a stage may release a block's
// held tail and its end as two chunks. What the stage releases is what the policies passed;
// a refusal is recorded, the run is stopped, and a `tripwire` chunk is the stage's last.
import { type ChunkType } from '@mastra/core/stream';
import { type EvaluationOutcome } from '../policy-engine/evaluate.js';
import { leafText } from '../policy-engine/extract-text.js';
import { CHANNEL_OF, settle, type StreamJudge, type StreamVerdict } from '../policy-engine/stream-judge.js';
import { type OutputChannel } from '../policy-engine/types.js';
import { RUN_STOPS, type StreamStage } from './stream-stages.js';

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

// One channel's text as the caller reads it: the blocks' deltas in arrival order, one running
// segment for the policies (a phrase may start in one block or step and end in the next, and a
// caller's textStream joins them). `pieces` is what was read and not yet released, by block;
// a block's end waits until all of its text is released.
interface ChannelFlow {
  readonly channel: OutputChannel;
  readonly pieces: { id: unknown; text: string }[];
  /** Per block: code units read and not yet released. */
  readonly held: Map<string, number>;
  /** Ends of blocks that ended while text of theirs was held. */
  readonly endChunks: Map<string, ChunkType>;
  /** The block whose deltas are being read: one at a time per channel. */
  open: string | undefined;
}

const NONE: ChunkType[] = Object.freeze([]) as unknown as ChunkType[];
const DELTA_TYPE: Readonly<Record<OutputChannel, string>> = { answer: 'text-delta', reasoning: 'reasoning-delta', object: 'text-delta' };

export function createContentStage(options: ContentStageOptions): ContentStage {
  const { judge } = options;
  let released = '';
  let reasoning = '';
  // The arguments the model wrote into its tool calls: part of its output, judged with it at the end.
  const calls: string[] = [];
  let stopped = false;
  let finish!: (end: ContentEnd) => void;
  const ended = new Promise<ContentEnd>((resolve) => (finish = resolve));
  const flows = new Map<OutputChannel, ChannelFlow>();
  const flowOf = (channel: OutputChannel): ChannelFlow => {
    let flow = flows.get(channel);
    if (!flow) {
      flow = { channel, pieces: [], held: new Map(), endChunks: new Map(), open: undefined };
      flows.set(channel, flow);
    }
    return flow;
  };

  const refuse = async (channel: OutputChannel, outcome: Exclude<EvaluationOutcome, { kind: 'allowed' }>, at: ChunkType): Promise<ChunkType[]> => {
    judge.drop();
    flows.clear();
    stopped = true;
    const told = await options.record(channel, outcome);
    options.stop();
    finish({ kind: 'refused', ...told });
    const policy = outcome.kind === 'denied' ? { policy: outcome.policy } : {};
    return [{ type: 'tripwire', runId: at.runId, from: at.from, payload: { reason: told.reason, processorId: options.processorId, metadata: { code: told.code, ...policy, phase: 'output', channel } } } as ChunkType];
  };

  // Releases `length` code units of the channel's held text: a delta per block run, then the ends
  // of blocks that have ended and have nothing held any more.
  const release = (flow: ChannelFlow, length: number, at: ChunkType): ChunkType[] => {
    if (length === 0) return NONE;
    const out: ChunkType[] = [];
    const emptied: string[] = [];
    let left = length;
    while (left > 0 && flow.pieces.length > 0) {
      const piece = flow.pieces[0]!;
      const text = piece.text.length <= left ? piece.text : piece.text.slice(0, left);
      if (text.length === piece.text.length) flow.pieces.shift();
      else piece.text = piece.text.slice(left);
      left -= text.length;
      const key = String(piece.id);
      const held = (flow.held.get(key) ?? 0) - text.length;
      flow.held.set(key, held);
      if (held === 0) emptied.push(key);
      if (flow.channel === 'answer') released += text;
      else reasoning += text;
      const last = out[out.length - 1] as { type: string; payload: { id: unknown; text: string } } | undefined;
      if (last !== undefined && last.payload.id === piece.id && last.type === DELTA_TYPE[flow.channel]) last.payload.text += text;
      else out.push({ type: DELTA_TYPE[flow.channel], runId: at.runId, from: at.from, payload: { id: piece.id, text } } as ChunkType);
    }
    // The ends of blocks that ended and now have nothing held.
    for (const key of emptied) {
      const end = flow.endChunks.get(key);
      if (end === undefined) continue;
      out.push(end);
      flow.endChunks.delete(key);
    }
    return out;
  };

  const judged = (flow: ChannelFlow, verdict: StreamVerdict, at: ChunkType): ChunkType[] | Promise<ChunkType[]> =>
    verdict.kind === 'refuse' ? refuse(flow.channel, verdict.outcome, at) : release(flow, verdict.text.length, at);

  // The end of the run's output: each channel judged whole, and what was held released.
  const closeFlows = (at: ChunkType): ChunkType[] | Promise<ChunkType[]> => {
    const pending = [...flows.values()];
    const next = (index: number, out: ChunkType[]): ChunkType[] | Promise<ChunkType[]> => {
      if (index >= pending.length) return out;
      const flow = pending[index]!;
      return settle(judge.end(flow.channel, '', options.signal), (verdict): ChunkType[] | Promise<ChunkType[]> => {
        if (verdict.kind === 'refuse') return refuse(flow.channel, verdict.outcome, at);
        return next(index + 1, [...out, ...release(flow, Number.MAX_SAFE_INTEGER, at)]);
      });
    };
    return next(0, []);
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
        if (RUN_STOPS.has(chunk.type)) {
          judge.drop();
          flows.clear();
        }
        // The run's last chunk: everything held is judged whole, then released before it.
        if (chunk.type === 'finish') {
          return settle(closeFlows(chunk), (out) => {
            if (stopped) return out;
            flows.clear();
            return [...out, chunk];
          });
        }
        return [chunk];
      }
      const payload = (chunk as { payload?: { id?: unknown; text?: unknown } }).payload ?? {};
      const flow = flowOf(shape.channel);
      const key = String(payload.id ?? '');
      if (shape.edge === 'end') {
        if (flow.open === key) flow.open = undefined;
        if ((flow.held.get(key) ?? 0) === 0) return [chunk];
        flow.endChunks.set(key, chunk);
        return [];
      }
      // A delta that is not text cannot be judged: refuse rather than pass it through unread.
      if (typeof payload.text !== 'string') return refuse(shape.channel, { kind: 'error', policy: 'stream-reader', code: 'POLICY.INVALID_DECISION' }, chunk);
      // Two blocks of a channel written at once: a caller grouping by block reads another text than
      // the one judged in arrival order. Refused rather than judged twice over.
      if (flow.open !== undefined && flow.open !== key) return refuse(shape.channel, { kind: 'error', policy: 'stream-reader', code: 'POLICY.INVALID_DECISION' }, chunk);
      flow.open = key;
      if (payload.text.length === 0) return [];
      flow.pieces.push({ id: payload.id, text: payload.text });
      flow.held.set(key, (flow.held.get(key) ?? 0) + payload.text.length);
      return settle(judge.delta(shape.channel, '', payload.text, options.signal), (verdict) => judged(flow, verdict, chunk));
    },
    async end() {
      // No `finish` chunk came (the source just ended): what is held is judged whole first.
      const tail = flows.size > 0 && !stopped ? await closeFlows({ type: 'finish' } as ChunkType) : [];
      if (stopped) return tail;
      judge.drop();
      const answer = calls.length === 0 ? released : [released, ...calls].join('\n');
      const refused = options.final === undefined ? undefined : await options.final({ answer, reasoning });
      if (refused === undefined) {
        finish({ kind: 'finished', text: released });
        return tail;
      }
      // Everything was judged as it streamed; the whole (with the tool arguments) can still refuse.
      stopped = true;
      finish({ kind: 'refused', ...refused });
      return [...tail, { type: 'tripwire', payload: { reason: refused.reason, processorId: options.processorId, metadata: { code: refused.code, phase: 'output' } } } as unknown as ChunkType];
    },
    abandon() {
      judge.drop();
      flows.clear();
      finish({ kind: 'finished', text: released });
    },
  };
}
