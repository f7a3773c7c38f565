import { normalizedView } from './normalized-view.js';
import {
  DETECTION_ID,
  type PolicyDecision,
  type OutputChannel,
  OUTPUT_CHANNELS,
  POLICY_PHASES,
  type PolicyEvaluator,
  type PolicyPhase,
} from './types.js';
import { readDeclaredDetections, screenDetections } from './declared-detections.js';

const MAX_DETECTIONS = 32;

/** A policy as the engine holds it: copied at construction, so later mutation changes nothing. */
export interface PolicySnapshot {
  readonly name: string;
  readonly phases: ReadonlySet<PolicyPhase>;
  readonly channels: ReadonlySet<OutputChannel>;
  /** Finite bound, or undefined for "whole segment". */
  readonly window: number | undefined;
  /** The detection names the policy declared; a verdict's other names are recorded as `undeclared`. */
  readonly detections: ReadonlySet<string>;
  /** The text it judges: the normalized view or the source as written. */
  readonly reads: 'normalized' | 'source';
  readonly evaluate: PolicyEvaluator['evaluate'];
}

/** Copies and validates a policy list; throws a TypeError naming the bad entry. */
export function snapshotPolicies(policies: readonly PolicyEvaluator[], where: string): readonly PolicySnapshot[] {
  if (!Array.isArray(policies)) throw new TypeError(`${where}: policies must be an array`);
  const names = new Set<string>();
  return Object.freeze(
    policies.map((policy, index) => {
      if (policy === null || typeof policy !== 'object') throw new TypeError(`${where}: policies[${index}] is not a policy`);
      const { name, phases, channels, holdBackChars, detections, evaluate, reads } = policy;
      if (typeof name !== 'string' || !DETECTION_ID.test(name)) throw new TypeError(`${where}: policies[${index}] needs a name of letters, digits, . _ : -`);
      if (names.has(name)) throw new TypeError(`${where}: two policies are named "${name}"`);
      names.add(name);
      if (typeof evaluate !== 'function') throw new TypeError(`${where}: policy "${name}" has no evaluate function`);
      if (!Array.isArray(phases) || phases.length === 0 || phases.some((p) => !POLICY_PHASES.includes(p))) {
        throw new TypeError(`${where}: policy "${name}" has invalid phases`);
      }
      if (!Array.isArray(channels) || channels.length === 0 || channels.some((c) => !OUTPUT_CHANNELS.includes(c))) {
        throw new TypeError(`${where}: policy "${name}" has invalid channels`);
      }
      if (reads !== undefined && reads !== 'normalized' && reads !== 'source') throw new TypeError(`${where}: policy "${name}" reads must be "normalized" or "source"`);
      if (holdBackChars !== undefined && (typeof holdBackChars !== 'number' || Number.isNaN(holdBackChars) || holdBackChars < 0)) {
        throw new TypeError(`${where}: policy "${name}" has an invalid holdBackChars`);
      }
      return Object.freeze({
        name,
        phases: new Set(phases),
        channels: new Set(channels),
        window: holdBackChars === undefined || !Number.isFinite(holdBackChars) ? undefined : Math.ceil(holdBackChars),
        detections: readDeclaredDetections(detections, `${where}: policy "${name}"`, DETECTION_ID),
        reads: reads ?? 'normalized',
        evaluate: evaluate.bind(policy),
      });
    }),
  );
}

export type EvaluationOutcome =
  | { readonly kind: 'allowed' }
  | { readonly kind: 'denied'; readonly policy: string; readonly detections: readonly string[] }
  | { readonly kind: 'error'; readonly policy: string; readonly code: 'POLICY.EVALUATION_FAILED' | 'POLICY.EVALUATION_TIMEOUT' | 'POLICY.INVALID_DECISION' };

/** What one policy is given to judge: its text, and where that text sits in the segment. */
export interface PolicyText {
  readonly text: string;
  readonly offset: number;
  readonly segmentLength: number;
  readonly previousSegmentLength: number;
}

export interface EvaluationRequest {
  readonly phase: PolicyPhase;
  readonly channel: OutputChannel;
  readonly final: boolean;
  readonly signal?: AbortSignal | undefined;
  readonly timeoutMs: number;
  /** The text a policy judges: the whole segment, or a window of it for streaming, in the form the policy reads. */
  readonly textFor: (policy: PolicySnapshot) => PolicyText;
}

/**
 * A whole text judged by `policies`: each reads its form (the normalized view, or the source as
 * written); when the view differs from the source, the view-reading policies read the source as
 * well, and either reading may refuse.
 */
export function evaluateWhole(policies: readonly PolicySnapshot[], request: Omit<EvaluationRequest, 'textFor'>, source: string): EvaluationOutcome | Promise<EvaluationOutcome> {
  const textFor = wholeText(source);
  const first = evaluatePolicies(policies, { ...request, textFor });
  const view = normalizedView(source);
  if (view === source) return first;
  const asWritten: PolicyText = { text: source, offset: 0, segmentLength: source.length, previousSegmentLength: 0 };
  const readers = policies.filter((policy) => policy.reads !== 'source');
  const again = (outcome: EvaluationOutcome) => (outcome.kind !== 'allowed' || readers.length === 0 ? outcome : evaluatePolicies(readers, { ...request, textFor: () => asWritten }));
  return first instanceof Promise ? first.then(again) : again(first);
}

/** `textFor` of a whole text: the normalized view (folded once, when a policy first asks) or the source. */
export function wholeText(source: string): (policy: PolicySnapshot) => PolicyText {
  let view: PolicyText | undefined;
  const asWritten: PolicyText = { text: source, offset: 0, segmentLength: source.length, previousSegmentLength: 0 };
  return (policy) => {
    if (policy.reads === 'source') return asWritten;
    if (view === undefined) {
      const text = normalizedView(source);
      view = { text, offset: 0, segmentLength: text.length, previousSegmentLength: 0 };
    }
    return view;
  };
}

/** Policies that judge `phase` on `channel`, in order. */
export function applicable(policies: readonly PolicySnapshot[], phase: PolicyPhase, channel: OutputChannel): PolicySnapshot[] {
  return policies.filter((p) => p.phases.has(phase) && p.channels.has(channel));
}

async function withDeadline<T>(work: PromiseLike<T>, ms: number, controller: AbortController): Promise<T | typeof TIMEOUT> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<typeof TIMEOUT>((resolve) => {
    timer = setTimeout(() => {
      controller.abort();
      resolve(TIMEOUT);
    }, ms);
  });
  try {
    return await Promise.race([work, timeout]);
  } finally {
    clearTimeout(timer);
  }
}
const TIMEOUT = Symbol('timeout');

function isThenable(value: unknown): value is PromiseLike<unknown> {
  return value !== null && (typeof value === 'object' || typeof value === 'function') && typeof (value as { then?: unknown }).then === 'function';
}

/**
 * The heart of the content boundary: runs the applicable policies in order and returns
 * the first denial or error. Every throw, timeout or malformed verdict is a failure, never
 * an allow. A policy that answers synchronously needs no deadline (no timer can interrupt it)
 * and no promise: while every policy answers at once the outcome is returned at once (a stream
 * judges every chunk, and each promise costs there); only a promise is raced against a deadline.
 */
export function evaluatePolicies(policies: readonly PolicySnapshot[], request: EvaluationRequest): EvaluationOutcome | Promise<EvaluationOutcome> {
  return evaluateFrom(policies, request, 0, new PolicySignal(request.signal));
}

/**
 * The signal policies get: aborted with the caller's, or at a deadline. Made when a policy first
 * reads it (or answers with a promise): a synchronous policy that never looks costs no controller
 * and no listener on the caller's signal, which a stream judging every chunk would feel.
 */
class PolicySignal {
  private controller: AbortController | undefined;
  private unlink: (() => void) | undefined;

  constructor(private readonly outer: AbortSignal | undefined) {}

  get live(): AbortController {
    if (this.controller === undefined) {
      const controller = new AbortController();
      const outer = this.outer;
      if (outer !== undefined) {
        if (outer.aborted) controller.abort();
        const onAbort = () => controller.abort();
        outer.addEventListener('abort', onAbort, { once: true });
        this.unlink = () => outer.removeEventListener('abort', onAbort);
      }
      this.controller = controller;
    }
    return this.controller;
  }

  release<T>(outcome: T): T {
    this.unlink?.();
    this.unlink = undefined;
    return outcome;
  }
}

// What a policy is told (PolicyContext): a class, so its signal getter costs nothing to create.
class Context {
  readonly phase: PolicyPhase;
  readonly channel: OutputChannel;
  readonly final: boolean;

  constructor(
    request: EvaluationRequest,
    readonly offset: number,
    readonly segmentLength: number,
    readonly previousSegmentLength: number,
    private readonly policySignal: PolicySignal,
  ) {
    this.phase = request.phase;
    this.channel = request.channel;
    this.final = request.final;
  }

  get signal(): AbortSignal {
    return this.policySignal.live.signal;
  }
}

// Runs policies[from..] until one answers with a promise, which the rest then waits for.
function evaluateFrom(policies: readonly PolicySnapshot[], request: EvaluationRequest, from: number, signal: PolicySignal): EvaluationOutcome | Promise<EvaluationOutcome> {
  for (let index = from; index < policies.length; index++) {
    const policy = policies[index]!;
    if (!policy.phases.has(request.phase) || !policy.channels.has(request.channel)) continue;
    let verdict: unknown;
    try {
      const { text, offset, segmentLength, previousSegmentLength } = request.textFor(policy);
      verdict = policy.evaluate(text, new Context(request, offset, segmentLength, previousSegmentLength, signal));
    } catch {
      return signal.release(failure(policy, 'POLICY.EVALUATION_FAILED'));
    }
    if (isThenable(verdict)) {
      return withDeadline(verdict, request.timeoutMs, signal.live).then(
        (settled) => {
          const outcome = judged(policy, settled);
          if (outcome !== undefined) return signal.release(outcome);
          return evaluateFrom(policies, request, index + 1, signal);
        },
        () => signal.release(failure(policy, 'POLICY.EVALUATION_FAILED')),
      );
    }
    const outcome = judged(policy, verdict);
    if (outcome !== undefined) return signal.release(outcome);
  }
  return signal.release(ALLOWED_OUTCOME);
}

const ALLOWED_OUTCOME: EvaluationOutcome = Object.freeze({ kind: 'allowed' });

function failure(policy: PolicySnapshot, code: 'POLICY.EVALUATION_FAILED'): EvaluationOutcome {
  return { kind: 'error', policy: policy.name, code };
}

// A verdict's outcome, or undefined when it allows (the next policy decides).
function judged(policy: PolicySnapshot, verdict: unknown): EvaluationOutcome | undefined {
  if (verdict === TIMEOUT) return { kind: 'error', policy: policy.name, code: 'POLICY.EVALUATION_TIMEOUT' };
  if (verdict === null || typeof verdict !== 'object' || typeof (verdict as { allowed?: unknown }).allowed !== 'boolean') {
    return { kind: 'error', policy: policy.name, code: 'POLICY.INVALID_DECISION' };
  }
  if ((verdict as { allowed: boolean }).allowed) return undefined;
  return { kind: 'denied', policy: policy.name, detections: denialDetections(verdict as PolicyDecision, policy.detections) };
}

// What a denial may name: the names its policy declared, at most 32, and `undeclared` for the rest.
function denialDetections(verdict: PolicyDecision, declared: ReadonlySet<string>): readonly string[] {
  const listed = (verdict as { detections?: unknown }).detections;
  const raw: readonly unknown[] = Array.isArray(listed) ? listed : [];
  return screenDetections(raw, declared, MAX_DETECTIONS);
}
