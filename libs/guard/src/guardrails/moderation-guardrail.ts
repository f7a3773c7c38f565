import { type JsonValue, readOptions } from '@gatehouse/contracts';
import { type GuardrailReasonCode } from './reasons.js';
import { GUARDRAIL_PLACEMENTS, type Guardrail, type GuardrailInput, type GuardrailPlacement, type GuardrailVerdict } from './types.js';

/** A classifier's answer: a score in [0, 1] (trips above the threshold) or a flag, with optional category names. */
export type ModerationScore = { readonly score: number; readonly categories?: readonly string[] } | { readonly flagged: boolean; readonly categories?: readonly string[] };

/** The user's classifier: gets the text and an AbortSignal that fires at the deadline. */
export type ModerationClassifier = (text: string, options: { readonly signal: AbortSignal; readonly placement: GuardrailPlacement }) => Promise<ModerationScore> | ModerationScore;

export type ModerationAction = 'deny' | 'halt' | 'approve' | 'observe';

export interface ModerationGuardrailOptions {
  readonly classify: ModerationClassifier;
  /** A score above it trips; default 0.5. */
  readonly threshold?: number;
  /** What a trip does; default `halt`. */
  readonly action?: ModerationAction;
  /** Deadline of one classification, ms (default 2000); past it the verdict is deny/partial. */
  readonly timeoutMs?: number;
  /** Default `moderation`. */
  readonly name?: string;
  /** Default every placement but `egress`. */
  readonly placements?: readonly GuardrailPlacement[];
  /**
   * The categories the classifier may name (letters, digits, `. _ -`): each is declared as the
   * detection `moderation.<category>`. A category outside this list is not named; a trip that names
   * none of them is `moderation.flagged`. Default none.
   */
  readonly categories?: readonly string[];
}

const CATEGORY = /^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$/;
const ACTIONS: ReadonlySet<string> = new Set(['deny', 'halt', 'approve', 'observe']);

function textOf(value: JsonValue): string {
  if (typeof value === 'string') return value;
  const parts: string[] = [];
  const walk = (v: JsonValue): void => {
    if (typeof v === 'string') parts.push(v);
    else if (Array.isArray(v)) v.forEach(walk);
    else if (v !== null && typeof v === 'object') Object.values(v).forEach(walk);
  };
  walk(value);
  return parts.join('\n');
}

function readCategories(value: unknown): ReadonlySet<string> {
  if (value === undefined) return new Set();
  if (!Array.isArray(value) || value.some((c) => typeof c !== 'string' || !CATEGORY.test(c))) {
    throw new TypeError('createModerationGuardrail: categories must be names of letters, digits and . _ -');
  }
  return new Set(value as string[]);
}

const fault = (reason: GuardrailReasonCode): GuardrailVerdict => ({ action: 'deny', outcome: 'partial', detections: [], reason });

/**
 * Asks the user's classifier about the text of the value (string leaves of JSON, joined). A score above
 * `threshold` (or `flagged: true`) trips with `action`; a classifier that throws, times out or answers
 * with something else is deny/partial. Detections are `moderation.<category>` (of `categories`) or `moderation.flagged`.
 */
export function createModerationGuardrail(options: ModerationGuardrailOptions): Guardrail {
  if (options === null || typeof options !== 'object' || typeof options.classify !== 'function') throw new TypeError('createModerationGuardrail: classify must be a function');
  readOptions('createModerationGuardrail', options, ['classify', 'threshold', 'action', 'timeoutMs', 'name', 'placements', 'categories']);
  const threshold = options.threshold ?? 0.5;
  if (typeof threshold !== 'number' || !(threshold >= 0 && threshold <= 1)) throw new TypeError('createModerationGuardrail: threshold must be a number from 0 to 1');
  const action = options.action ?? 'halt';
  if (!ACTIONS.has(action)) throw new TypeError('createModerationGuardrail: action must be deny, halt, approve or observe');
  const timeoutMs = options.timeoutMs ?? 2_000;
  if (!Number.isSafeInteger(timeoutMs) || timeoutMs < 1) throw new TypeError('createModerationGuardrail: timeoutMs must be a positive integer');
  const placements = options.placements ?? GUARDRAIL_PLACEMENTS.filter((p) => p !== 'egress');
  const classify = options.classify;
  const categories = readCategories(options.categories);
  const detections = Object.freeze(['moderation.flagged', ...[...categories].map((c) => `moderation.${c}`)]);
  return Object.freeze({
    name: options.name ?? 'moderation',
    placements: Object.freeze([...placements]),
    detections,
    async check({ value, placement, signal }: GuardrailInput): Promise<GuardrailVerdict> {
      const deadline = AbortSignal.any([signal, AbortSignal.timeout(timeoutMs)]);
      let answer: unknown;
      try {
        answer = await new Promise<unknown>((resolve, reject) => {
          const onAbort = () => reject(new Error('deadline'));
          if (deadline.aborted) return onAbort();
          deadline.addEventListener('abort', onAbort, { once: true });
          Promise.resolve()
            .then(() => classify(textOf(value), { signal: deadline, placement }))
            .then(resolve, reject)
            .finally(() => deadline.removeEventListener('abort', onAbort));
        });
      } catch {
        return fault(deadline.aborted ? 'moderation.timeout' : 'moderation.failed');
      }
      if (answer === null || typeof answer !== 'object') return fault('moderation.no-score');
      const { score, flagged, categories: reported } = answer as { score?: unknown; flagged?: unknown; categories?: unknown };
      let trips: boolean;
      if (typeof score === 'number' && score >= 0 && score <= 1) trips = score > threshold;
      else if (typeof flagged === 'boolean' && score === undefined) trips = flagged;
      else return fault('moderation.no-score');
      if (!trips) return { action: 'allow', outcome: 'complete', detections: [] };
      // Only configured categories are named: one the classifier made up could spell the text.
      const named = Array.isArray(reported) ? reported.filter((c): c is string => typeof c === 'string' && categories.has(c)).slice(0, 16).map((c) => `moderation.${c}`) : [];
      return { action, outcome: 'complete', detections: named.length > 0 ? named : ['moderation.flagged'], reason: 'moderation.flagged' };
    },
  });
}
