// The content policies on a live stream: each block (an answer or reasoning text block) is judged
// as it grows, and with hold-back only what every policy has already judged together with what
// can follow it is released. Windows count characters of the normalized view (normalized-view.ts)
// for the policies that read it, and map back to source offsets for release.
import { type EvaluationOutcome, evaluatePolicies, type EvaluationRequest, type PolicySnapshot } from './evaluate.js';
import { releasableSource, windowStart } from './hold-back.js';
import { NormalizedText } from './normalized-view.js';
import { type OutputChannel } from './types.js';

/** What a block's new text allows: release this much of the source now, or refuse the stream. */
export type StreamVerdict =
  | { readonly kind: 'release'; readonly text: string }
  | { readonly kind: 'refuse'; readonly outcome: Exclude<EvaluationOutcome, { kind: 'allowed' }> };

interface Segment {
  readonly channel: OutputChannel;
  readonly policies: ChannelPolicies;
  /** The text so far, as written and as the normalized view policies read. */
  readonly text: NormalizedText;
  /** Source code units released. */
  released: number;
  /** Per policy and form: length of the text it read at its last evaluation. */
  readonly judged: { readonly view: Map<PolicySnapshot, number>; readonly source: Map<PolicySnapshot, number> };
  /** The evaluation requests of this segment, made once (by final, then form). */
  requests: Map<string, EvaluationRequest> | undefined;
}

/** Which channel a text chunk belongs to, and whether it adds text or ends its block. */
export const CHANNEL_OF: Readonly<Record<string, { readonly channel: OutputChannel; readonly edge: 'delta' | 'end' }>> = {
  'text-delta': { channel: 'answer', edge: 'delta' },
  'text-end': { channel: 'answer', edge: 'end' },
  'reasoning-delta': { channel: 'reasoning', edge: 'delta' },
  'reasoning-end': { channel: 'reasoning', edge: 'end' },
};

const NOTHING: StreamVerdict = Object.freeze({ kind: 'release', text: '' });
// Drop the judged and released start of a block from what is kept at hand once it is this long.
const KEEP_SLACK = 2048;

interface ChannelPolicies {
  readonly all: readonly PolicySnapshot[];
  readonly view: readonly PolicySnapshot[];
  readonly source: readonly PolicySnapshot[];
  /** Every policy bounded: the start of a block can be dropped from what the next judgement reads. */
  readonly bounded: boolean;
  readonly longestWindow: number;
}

/** One stream's blocks under the output policies. */
export class StreamJudge {
  private readonly segments = new Map<string, Segment>();
  private readonly byChannel: ReadonlyMap<OutputChannel, ChannelPolicies>;

  constructor(
    policies: readonly PolicySnapshot[],
    private readonly holdBack: boolean,
    private readonly timeoutMs: number,
  ) {
    const byChannel = new Map<OutputChannel, ChannelPolicies>();
    for (const channel of ['answer', 'reasoning', 'object'] as const) {
      const all = policies.filter((p) => p.phases.has('output') && p.channels.has(channel));
      byChannel.set(channel, {
        all,
        view: all.filter((p) => p.reads !== 'source'),
        source: all.filter((p) => p.reads === 'source'),
        bounded: all.every((p) => p.window !== undefined),
        longestWindow: Math.max(0, ...all.map((p) => p.window ?? 0)),
      });
    }
    this.byChannel = byChannel;
  }

  /** New text of block `id`: judged with what came before it (within each policy's window). Synchronous while every policy is. */
  delta(channel: OutputChannel, id: string, text: string, signal: AbortSignal | undefined): StreamVerdict | Promise<StreamVerdict> {
    const segment = this.segment(channel, id);
    segment.text.append(text);
    return settle(this.judge(segment, false, signal), (outcome) => this.release(segment, outcome));
  }

  /** The end of block `id`: judged whole; what was held is released. */
  end(channel: OutputChannel, id: string, signal: AbortSignal | undefined): StreamVerdict | Promise<StreamVerdict> {
    const key = `${channel}:${id}`;
    const segment = this.segments.get(key);
    if (segment === undefined) return NOTHING;
    this.segments.delete(key);
    return settle(this.judge(segment, true, signal), (outcome): StreamVerdict => {
      if (outcome.kind !== 'allowed') return { kind: 'refuse', outcome };
      const rest = segment.text.sourceBetween(segment.released, segment.text.written.length);
      return rest.length === 0 ? NOTHING : { kind: 'release', text: rest };
    });
  }

  private release(segment: Segment, outcome: EvaluationOutcome): StreamVerdict {
    if (outcome.kind !== 'allowed') return { kind: 'refuse', outcome };
    const { text: written, policies } = segment;
    const sourceReaders = written.same ? policies.source : policies.all;
    const releasable = this.holdBack ? releasableSource(written, policies.view, sourceReaders) : written.written.length;
    if (releasable <= segment.released) return NOTHING;
    const released = written.sourceBetween(segment.released, releasable);
    segment.released = releasable;
    if (policies.bounded) keepOnlyWhatIsRead(segment);
    return { kind: 'release', text: released };
  }

  /** The stream stopped: what is held is never released. */
  drop(): void {
    this.segments.clear();
  }

  private segment(channel: OutputChannel, id: string): Segment {
    const key = `${channel}:${id}`;
    let segment = this.segments.get(key);
    if (!segment) {
      segment = { channel, policies: this.byChannel.get(channel) ?? NO_POLICIES, text: new NormalizedText(), released: 0, judged: { view: new Map(), source: new Map() }, requests: undefined };
      this.segments.set(key, segment);
    }
    return segment;
  }

  // Each policy reads its form (the view, or the source as written); once the view differs from
  // the source, a view-reading policy reads the source too (a detector's word boundaries hold on
  // the source, where folding can join a neighbour onto a token), and either reading may refuse.
  private judge(segment: Segment, final: boolean, signal: AbortSignal | undefined): EvaluationOutcome | Promise<EvaluationOutcome> {
    const { text, policies } = segment;
    const first = evaluatePolicies(policies.all, this.request(segment, final, signal, false));
    if (text.same || policies.view.length === 0) return first;
    return settle(first, (outcome) => (outcome.kind !== 'allowed' ? outcome : evaluatePolicies(policies.view, this.request(segment, final, signal, true))));
  }

  // The request a segment is judged with (one per final/form, made once: a stream judges every chunk).
  private request(segment: Segment, final: boolean, signal: AbortSignal | undefined, allSource: boolean): EvaluationRequest {
    const key = `${final ? 'f' : 'd'}${allSource ? 's' : 'v'}`;
    const cached = segment.requests?.get(key);
    if (cached !== undefined) return cached;
    const { text, judged } = segment;
    const request: EvaluationRequest = {
      phase: 'output',
      channel: segment.channel,
      final,
      signal,
      timeoutMs: this.timeoutMs,
      textFor: (policy) => {
        // The end of a block, or a policy without a window, reads all of it.
        const source = allSource || policy.reads === 'source';
        const read = source ? text.written : text.view;
        const lengths = source ? judged.source : judged.view;
        const previous = lengths.get(policy) ?? 0;
        lengths.set(policy, read.length);
        if (final || policy.window === undefined) {
          const whole = source ? text.source : text.text;
          return { text: whole, offset: 0, segmentLength: whole.length, previousSegmentLength: previous };
        }
        const start = windowStart(read, previous, policy.window);
        return { text: read.slice(start), offset: start, segmentLength: read.length, previousSegmentLength: previous };
      },
    };
    (segment.requests ??= new Map()).set(key, request);
    return request;
  }
}

const NO_POLICIES: ChannelPolicies = Object.freeze({ all: [], view: [], source: [], bounded: true, longestWindow: 0 });

// Every policy bounded: the next judgement of each starts at its window before the current end (or
// at the token it cuts), and nothing before what was released is shown again. Drop the rest from
// what is kept at hand (the whole stays for the end of the block).
function keepOnlyWhatIsRead(segment: Segment): void {
  const { text, policies } = segment;
  // Cheap first: nothing worth dropping until the kept view is well past the longest window.
  if (text.view.length - text.keptFrom < KEEP_SLACK + policies.longestWindow) return;
  let keepView = text.view.length;
  for (const policy of policies.view) keepView = Math.min(keepView, windowStart(text.view, text.view.length, policy.window!));
  let keepSource = Math.min(segment.released, text.sourceOffset(keepView));
  for (const policy of text.same ? policies.source : policies.all) keepSource = Math.min(keepSource, windowStart(text.written, text.written.length, policy.window!));
  if (keepView - text.keptFrom < KEEP_SLACK) return;
  text.keepFrom(keepView, keepSource);
}

/** `then` for a value that may or may not be a promise: synchronous when it is not. */
export function settle<T, R>(value: T | Promise<T>, next: (value: T) => R | Promise<R>): R | Promise<R> {
  return value instanceof Promise ? value.then(next) : next(value);
}
