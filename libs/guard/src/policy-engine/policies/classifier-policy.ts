import { describeType, readOptions } from '@gatehouse/contracts';
import {
  DETECTION_ID,
  type OutputChannel,
  type PolicyContext,
  type PolicyDecision,
  type PolicyEvaluator,
  type PolicyPhase,
} from '../types.js';
import {
  MAX_TIMER_MS,
  readChannels,
  readHoldBackChars,
  readInteger,
  readName,
  readPhases,
} from './validation.js';

/** A classifier's answer: a bare verdict, or a verdict with a label (one of `labels`) for the audit trail. */
export type ClassifierVerdict = boolean | { readonly allowed: boolean; readonly label?: string };

/** What a classifier is told besides the text. */
export interface ClassifierContext {
  readonly phase: PolicyPhase;
  readonly channel: OutputChannel;
  readonly final: boolean;
  /** Aborted when the evaluation times out or the call is aborted: stop work and return. */
  readonly signal: AbortSignal;
}

/** When a classifier judges unfinished output: never (`final`), on every chunk, or each time N more characters arrive. */
export type ClassifierCadence = 'final' | 'every-chunk' | { readonly everyChars: number };

/** Options for `classifierPolicy`. */
export interface ClassifierPolicyOptions {
  readonly name?: string;
  readonly classify: (text: string, context: ClassifierContext) => ClassifierVerdict | PromiseLike<ClassifierVerdict>;
  /** Time allowed for an asynchronous verdict (default 2000 ms); later is a denial. */
  readonly timeoutMs?: number;
  readonly cadence?: ClassifierCadence;
  readonly phases?: readonly PolicyPhase[];
  readonly channels?: readonly OutputChannel[];
  /** Unbounded by default: a classifier's judgement has no maximum match length. */
  readonly holdBackChars?: number;
  /**
   * Every label the classifier may give (each matching `DETECTION_ID`): the policy declares them,
   * with its own `classifier-error`, `classifier-timeout` and `classifier-no-decision`, as its
   * detections. A denial with any other label denies naming no label.
   */
  readonly labels?: readonly string[];
}

const WHERE = 'classifierPolicy';
const KNOWN_OPTIONS = ['name', 'classify', 'timeoutMs', 'cadence', 'phases', 'channels', 'holdBackChars', 'labels'] as const;
const OWN_DETECTIONS = ['classifier-error', 'classifier-timeout', 'classifier-no-decision'] as const;
const DEFAULT_TIMEOUT_MS = 2000;

const ALLOWED: PolicyDecision = Object.freeze({ allowed: true });
const DENIED: PolicyDecision = Object.freeze({ allowed: false });
const ERROR: PolicyDecision = denial(OWN_DETECTIONS[0]);
const TIMEOUT: PolicyDecision = denial(OWN_DETECTIONS[1]);
const NO_DECISION: PolicyDecision = denial(OWN_DETECTIONS[2]);

/** Delegates to `classify`; a throw, a timeout or an answer that is not a verdict denies. */
export function classifierPolicy(options: ClassifierPolicyOptions): PolicyEvaluator {
  if (options === undefined) throw new TypeError(`${WHERE}: options with a classify function are required`);
  const bag = readOptions(WHERE, options, KNOWN_OPTIONS);
  const classify = bag.classify;
  if (typeof classify !== 'function') {
    throw new TypeError(`${WHERE}: classify must be a function, got ${describeType(classify)}`);
  }
  const name = readName(WHERE, bag.name, 'classifier');
  const timeoutMs = readInteger(WHERE, 'timeoutMs', bag.timeoutMs, DEFAULT_TIMEOUT_MS, 1, MAX_TIMER_MS);
  const isDue = readCadence(bag.cadence);
  const phases = readPhases(WHERE, bag.phases, ['input', 'output']);
  const channels = readChannels(WHERE, bag.channels, ['answer']);
  const holdBackChars = readHoldBackChars(WHERE, bag.holdBackChars);
  const labels = readLabels(bag.labels);
  const interpret = (value: unknown): PolicyDecision => interpretVerdict(value, labels);
  const run = classify as ClassifierPolicyOptions['classify'];

  const evaluate = (text: string, context: PolicyContext): PolicyDecision | Promise<PolicyDecision> => {
    if (!context.final && !isDue(context)) return ALLOWED;
    if (context.signal.aborted) return TIMEOUT;
    const controller = new AbortController();
    let outcome: unknown;
    try {
      outcome = run(text, {
        phase: context.phase,
        channel: context.channel,
        final: context.final,
        signal: controller.signal,
      });
      if (!isThenable(outcome)) return interpret(outcome);
    } catch {
      return ERROR;
    }
    return settle(outcome, timeoutMs, controller, context.signal, interpret);
  };

  const detections = Object.freeze([...new Set([...labels, ...OWN_DETECTIONS])]);
  return Object.freeze({ name, phases, channels, holdBackChars, detections, evaluate });
}

function readLabels(value: unknown): ReadonlySet<string> {
  if (value === undefined) return new Set();
  if (!Array.isArray(value)) throw new TypeError(`${WHERE}: labels must be an array, got ${describeType(value)}`);
  for (const label of value as unknown[]) {
    if (typeof label !== 'string' || !DETECTION_ID.test(label)) throw new TypeError(`${WHERE}: labels must be names of letters, digits and . _ : -`);
  }
  return new Set(value as string[]);
}

function readCadence(value: unknown): (context: PolicyContext) => boolean {
  if (value === undefined || value === 'final') return () => false;
  if (value === 'every-chunk') return () => true;
  if (value !== null && typeof value === 'object' && !Array.isArray(value)) {
    const bag = readOptions(`${WHERE}: cadence`, value, ['everyChars']);
    if (bag.everyChars === undefined) throw new TypeError(`${WHERE}: cadence.everyChars is required`);
    const every = readInteger(WHERE, 'cadence.everyChars', bag.everyChars, 0, 1);
    // Due when the segment has crossed a multiple of `every` since this policy last judged it.
    return ({ segmentLength, previousSegmentLength }) =>
      Math.floor(segmentLength / every) > Math.floor(previousSegmentLength / every);
  }
  throw new TypeError(`${WHERE}: cadence must be 'final', 'every-chunk' or { everyChars: n }`);
}

function isThenable(value: unknown): value is PromiseLike<unknown> {
  // Reading `then` may run a getter that throws: the caller turns that into a denial.
  return (
    ((typeof value === 'object' && value !== null) || typeof value === 'function') &&
    typeof (value as { then?: unknown }).then === 'function'
  );
}

function settle(
  outcome: PromiseLike<unknown>,
  timeoutMs: number,
  controller: AbortController,
  callSignal: AbortSignal,
  interpret: (value: unknown) => PolicyDecision,
): Promise<PolicyDecision> {
  return new Promise<PolicyDecision>((resolve) => {
    let done = false;
    const finish = (decision: PolicyDecision, abortClassifier: boolean): void => {
      if (done) return;
      done = true;
      clearTimeout(timer);
      callSignal.removeEventListener('abort', onCallAbort);
      if (abortClassifier) controller.abort();
      resolve(decision);
    };
    const onCallAbort = (): void => finish(TIMEOUT, true);
    const timer = setTimeout(() => finish(TIMEOUT, true), timeoutMs);
    callSignal.addEventListener('abort', onCallAbort, { once: true });
    // Handlers stay attached after a timeout, so a late rejection is absorbed rather than unhandled.
    Promise.resolve(outcome).then(
      (value) => finish(safeInterpret(value, interpret), false),
      () => finish(ERROR, false),
    );
  });
}

function safeInterpret(value: unknown, interpret: (value: unknown) => PolicyDecision): PolicyDecision {
  try {
    return interpret(value);
  } catch {
    return ERROR;
  }
}

// Reads `allowed` and `label` once each: a getter cannot show validation one answer and use another.
function interpretVerdict(value: unknown, labels: ReadonlySet<string>): PolicyDecision {
  if (value === true) return ALLOWED;
  if (value === false) return DENIED;
  if (value === null || typeof value !== 'object') return NO_DECISION;
  const { allowed, label } = value as { allowed?: unknown; label?: unknown };
  if (allowed === true) return ALLOWED;
  if (allowed !== false) return NO_DECISION;
  // A label is named only when it was declared: one the classifier made up could spell the text.
  return typeof label === 'string' && labels.has(label) ? denial(label) : DENIED;
}

function denial(detection: string): PolicyDecision {
  return Object.freeze({ allowed: false, detections: Object.freeze([detection]) });
}
