import { describeType, readOptions } from '@gatehouse/contracts';
import { normalizedView } from '../normalized-view.js';
import type { OutputChannel, PolicyDecision, PolicyEvaluator, PolicyPhase } from '../types.js';
import {
  isRegExp,
  readChannels,
  readHoldBackChars,
  readName,
  readPhases,
  statelessCopy,
} from './validation.js';

/** Options for `denyPatterns`. */
export interface DenyPatternsOptions {
  readonly name?: string;
  readonly phases?: readonly PolicyPhase[];
  readonly channels?: readonly OutputChannel[];
  /** Longest match any pattern can produce; required for a bounded window when a RegExp is present. */
  readonly holdBackChars?: number;
}

const WHERE = 'denyPatterns';
const KNOWN_OPTIONS = ['name', 'phases', 'channels', 'holdBackChars'] as const;
const ALLOWED: PolicyDecision = Object.freeze({ allowed: true });
// Printable ASCII with single spaces: already its own normalized view (an anchored whole-string
// test, which V8 runs far faster than folding).
const PLAIN_TEXT = /^[\x20-\x7E]*$/;

type Matcher =
  | { readonly kind: 'string'; readonly detection: string; readonly needle: string }
  | { readonly kind: 'regexp'; readonly detection: string; readonly re: RegExp };

/** Denies text containing any of `patterns`: strings case-insensitively after NFKC, RegExps as written. */
export function denyPatterns(patterns: readonly (string | RegExp)[], options?: DenyPatternsOptions): PolicyEvaluator {
  const bag = readOptions(WHERE, options, KNOWN_OPTIONS);
  const name = readName(WHERE, bag.name, 'deny-patterns');
  const phases = readPhases(WHERE, bag.phases, ['input', 'output']);
  const channels = readChannels(WHERE, bag.channels, ['answer', 'reasoning', 'object']);
  const requestedHoldBack = readHoldBackChars(WHERE, bag.holdBackChars);
  const { matchers, longestString, hasRegExp } = compilePatterns(patterns);

  if (requestedHoldBack !== undefined && requestedHoldBack < longestString) {
    // A window shorter than a literal pattern would release the start of a match unjudged.
    throw new TypeError(`${WHERE}: holdBackChars must be at least the length of the longest string pattern`);
  }
  const holdBackChars = requestedHoldBack ?? (hasRegExp ? undefined : longestString);

  const hasString = matchers.some((matcher) => matcher.kind === 'string');
  const evaluate = (text: string): PolicyDecision => {
    // The engine hands over the normalized view already; folding it again changes nothing.
    const normalized = PLAIN_TEXT.test(text) && !text.includes('  ') ? text : normalizedView(text);
    const folded = hasString ? normalized.toLowerCase() : '';
    let detections: string[] | undefined;
    for (const matcher of matchers) {
      // A RegExp also meets the normalized view, so look-alikes reach it as plain letters.
      const hit =
        matcher.kind === 'string'
          ? folded.includes(matcher.needle)
          : matcher.re.test(text) || (normalized !== text && matcher.re.test(normalized));
      if (hit) (detections ??= []).push(matcher.detection);
    }
    if (detections === undefined) return ALLOWED;
    return Object.freeze({ allowed: false, detections: Object.freeze(detections) });
  };

  return Object.freeze({ name, phases, channels, holdBackChars, detections: Object.freeze(matchers.map((m) => m.detection)), evaluate });
}

interface CompiledPatterns {
  readonly matchers: readonly Matcher[];
  readonly longestString: number;
  readonly hasRegExp: boolean;
}

function compilePatterns(patterns: unknown): CompiledPatterns {
  if (!Array.isArray(patterns)) {
    throw new TypeError(`${WHERE}: patterns must be an array, got ${describeType(patterns)}`);
  }
  if (patterns.length === 0) throw new TypeError(`${WHERE}: patterns must not be empty`);
  const matchers: Matcher[] = [];
  let longestString = 0;
  let hasRegExp = false;
  for (let i = 0; i < patterns.length; i++) {
    const pattern: unknown = patterns[i];
    const detection = `deny-pattern:${i}`;
    if (typeof pattern === 'string') {
      if (pattern.trim().length === 0) {
        // A blank pattern would match every text containing a space, or every text at all.
        throw new TypeError(`${WHERE}: patterns[${i}] must not be empty or blank`);
      }
      const needle = normalizedView(pattern).toLowerCase();
      // The window counts characters of the normalized view, which the engine judges; the raw
      // length is kept as a floor for callers that judge text as written.
      longestString = Math.max(longestString, pattern.length, needle.length);
      matchers.push({ kind: 'string', detection, needle });
    } else if (isRegExp(pattern)) {
      const re = statelessCopy(pattern);
      if (re.test('')) throw new TypeError(`${WHERE}: patterns[${i}] matches empty text, so it would deny everything`);
      hasRegExp = true;
      matchers.push({ kind: 'regexp', detection, re });
    } else {
      throw new TypeError(`${WHERE}: patterns[${i}] must be a string or a RegExp, got ${describeType(pattern)}`);
    }
  }
  return { matchers: Object.freeze(matchers), longestString, hasRegExp };
}
