import {
  DETECTION_ID,
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
  readonly evaluate: PolicyEvaluator['evaluate'];
}

/** Copies and validates a policy list; throws a TypeError naming the bad entry. */
export function snapshotPolicies(policies: readonly PolicyEvaluator[], where: string): readonly PolicySnapshot[] {
  if (!Array.isArray(policies)) throw new TypeError(`${where}: policies must be an array`);
  const names = new Set<string>();
  return Object.freeze(
    policies.map((policy, index) => {
      if (policy === null || typeof policy !== 'object') throw new TypeError(`${where}: policies[${index}] is not a policy`);
      const { name, phases, channels, holdBackChars, detections, evaluate } = policy;
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
      if (holdBackChars !== undefined && (typeof holdBackChars !== 'number' || Number.isNaN(holdBackChars) || holdBackChars < 0)) {
        throw new TypeError(`${where}: policy "${name}" has an invalid holdBackChars`);
      }
      return Object.freeze({
        name,
        phases: new Set(phases),
        channels: new Set(channels),
        window: holdBackChars === undefined || !Number.isFinite(holdBackChars) ? undefined : Math.ceil(holdBackChars),
        detections: readDeclaredDetections(detections, `${where}: policy "${name}"`, DETECTION_ID),
        evaluate: evaluate.bind(policy),
      });
    }),
  );
}

export type EvaluationOutcome =
  | { readonly kind: 'allowed' }
  | { readonly kind: 'denied'; readonly policy: string; readonly detections: readonly string[] }
  | { readonly kind: 'error'; readonly policy: string; readonly code: 'POLICY.EVALUATION_FAILED' | 'POLICY.EVALUATION_TIMEOUT' | 'POLICY.INVALID_DECISION' };

export interface EvaluationRequest {
  readonly phase: PolicyPhase;
  readonly channel: OutputChannel;
  readonly final: boolean;
  readonly signal?: AbortSignal | undefined;
  readonly timeoutMs: number;
  /** The text a policy judges: the whole segment, or a window of it for streaming. */
  readonly textFor: (policy: PolicySnapshot) => { text: string; offset: number; previousSegmentLength: number };
  readonly segmentLength: number;
}

/** Policies that judge `phase` on `channel`, in order. */
export function applicable(policies: readonly PolicySnapshot[], phase: PolicyPhase, channel: OutputChannel): PolicySnapshot[] {
  return policies.filter((p) => p.phases.has(phase) && p.channels.has(channel));
}

async function withDeadline<T>(work: Promise<T>, ms: number, controller: AbortController): Promise<T | typeof TIMEOUT> {
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

/**
 * The heart of the content boundary: runs the applicable policies in order and returns
 * the first denial or error. Every throw, timeout or malformed verdict is a failure, never
 * an allow.
 */
export async function evaluatePolicies(policies: readonly PolicySnapshot[], request: EvaluationRequest): Promise<EvaluationOutcome> {
  for (const policy of applicable(policies, request.phase, request.channel)) {
    const controller = new AbortController();
    const onAbort = () => controller.abort();
    request.signal?.addEventListener('abort', onAbort, { once: true });
    try {
      const { text, offset, previousSegmentLength } = request.textFor(policy);
      const verdict = await withDeadline(
        Promise.resolve().then(() =>
          policy.evaluate(text, {
            phase: request.phase,
            channel: request.channel,
            offset,
            segmentLength: request.segmentLength,
            previousSegmentLength,
            final: request.final,
            signal: controller.signal,
          }),
        ),
        request.timeoutMs,
        controller,
      );
      if (verdict === TIMEOUT) return { kind: 'error', policy: policy.name, code: 'POLICY.EVALUATION_TIMEOUT' };
      if (verdict === null || typeof verdict !== 'object' || typeof verdict.allowed !== 'boolean') {
        return { kind: 'error', policy: policy.name, code: 'POLICY.INVALID_DECISION' };
      }
      if (!verdict.allowed) {
        // Only the names the policy declared, and `undeclared` for the rest.
        const raw: readonly unknown[] = Array.isArray(verdict.detections) ? verdict.detections : [];
        return { kind: 'denied', policy: policy.name, detections: screenDetections(raw, policy.detections, MAX_DETECTIONS) };
      }
    } catch {
      return { kind: 'error', policy: policy.name, code: 'POLICY.EVALUATION_FAILED' };
    } finally {
      request.signal?.removeEventListener('abort', onAbort);
    }
  }
  return { kind: 'allowed' };
}
