import { describeType, readOptions } from '@gatehouse/contracts';
import type { OutputChannel, PolicyContext, PolicyDecision, PolicyEvaluator, PolicyPhase } from '../types.js';
import { readChannels, readName, readPhases } from './validation.js';

/** Options for `maxTextLength`. */
export interface MaxTextLengthOptions {
  readonly name?: string;
  readonly phases?: readonly PolicyPhase[];
  readonly channels?: readonly OutputChannel[];
}

const WHERE = 'maxTextLength';
const KNOWN_OPTIONS = ['name', 'phases', 'channels'] as const;
const ALLOWED: PolicyDecision = Object.freeze({ allowed: true });
const TOO_LONG_DETECTIONS: readonly string[] = Object.freeze(['max-text-length']);
const TOO_LONG: PolicyDecision = Object.freeze({ allowed: false, detections: TOO_LONG_DETECTIONS });

/** Denies a segment longer than `maxChars` UTF-16 code units. */
export function maxTextLength(maxChars: number, options?: MaxTextLengthOptions): PolicyEvaluator {
  if (typeof maxChars !== 'number') {
    throw new TypeError(`${WHERE}: maxChars must be a number, got ${describeType(maxChars)}`);
  }
  if (!Number.isSafeInteger(maxChars) || maxChars < 1) {
    throw new TypeError(`${WHERE}: maxChars must be a positive safe integer`);
  }
  const bag = readOptions(WHERE, options, KNOWN_OPTIONS);
  const name = readName(WHERE, bag.name, 'max-text-length');
  const phases = readPhases(WHERE, bag.phases, ['output']);
  const channels = readChannels(WHERE, bag.channels, ['answer']);

  // The engine may pass only a trailing window, so the judged length is the segment's, not
  // the text's. Taking the largest figure keeps an inconsistent context from under-counting,
  // and the `<=` test denies when a figure is not a number at all (NaN compares false).
  const evaluate = (text: string, context: PolicyContext): PolicyDecision =>
    Math.max(text.length, context.offset + text.length, context.segmentLength) <= maxChars ? ALLOWED : TOO_LONG;

  return Object.freeze({ name, phases, channels, holdBackChars: 0, detections: TOO_LONG_DETECTIONS, evaluate });
}
