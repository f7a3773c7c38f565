import { describeType, readOptions } from '@gatehouse/contracts';
import type { OutputChannel, PolicyDecision, PolicyEvaluator, PolicyPhase } from '../types.js';
import {
  isRegExp,
  readChannels,
  readEnumList,
  readHoldBackChars,
  readInteger,
  readName,
  readPhases,
  statelessCopy,
} from './validation.js';
import { highEntropyScanner, MAX_ENTROPY_TOKEN_LENGTH } from './detectors/entropy.js';
import { scanCards, scanEmails, scanPhones, scanSsns } from './detectors/pii-detection.js';
import { findsAny, type Scanner } from './detectors/scan.js';
import { scanAwsAccessKeys, scanJwts, scanPrivateKeys, scanSecretAssignments } from './detectors/secret-detection.js';
import { scanCredentialUrls, scanVendorTokens } from './detectors/vendor-tokens.js';

/** Stable identifiers of the `piiSecrets` detectors; each is also the detection it reports. */
export const PII_SECRETS_DETECTOR_IDS = Object.freeze([
  'email',
  'ssn',
  'phone',
  'creditCard',
  'awsAccessKey',
  'privateKey',
  'jwt',
  'secretAssignment',
  'highEntropy',
  // Added later: at the end, so the order (and the detections' order) of the others is unchanged.
  'vendorToken',
  'credentialUrl',
] as const);

/** One `piiSecrets` detector. */
export type PiiSecretsDetectorId = (typeof PII_SECRETS_DETECTOR_IDS)[number];

/** Options for `piiSecrets`. */
export interface PiiSecretsOptions {
  readonly name?: string;
  /** Detectors to run; all by default. */
  readonly detectors?: readonly PiiSecretsDetectorId[];
  /** A detected value equal to a string, or matched by a RegExp, is exempt. */
  readonly allowlist?: readonly (string | RegExp)[];
  /** Shannon entropy in bits per character at which a token counts as a secret (0 < t <= 8, default 4). */
  readonly entropyThreshold?: number;
  /** Shortest token the high-entropy detector judges (default 24). */
  readonly minEntropyTokenLength?: number;
  readonly phases?: readonly PolicyPhase[];
  readonly channels?: readonly OutputChannel[];
  /** Overrides the default hold-back of 64 characters. */
  readonly holdBackChars?: number;
}

const WHERE = 'piiSecrets';
const KNOWN_OPTIONS = [
  'name',
  'detectors',
  'allowlist',
  'entropyThreshold',
  'minEntropyTokenLength',
  'phases',
  'channels',
  'holdBackChars',
] as const;
// Covers the longest match that contains whitespace (a PEM header, a spaced card or phone
// number, an `api_key = "` prefix: all under 40); whitespace-free tokens are held whole by the engine.
const DEFAULT_HOLD_BACK_CHARS = 64;
const DEFAULT_ENTROPY_THRESHOLD = 4;
const DEFAULT_MIN_ENTROPY_TOKEN_LENGTH = 24;
const ALLOWED: PolicyDecision = Object.freeze({ allowed: true });
// Anchored whole-string test: V8 runs it about three times as fast as a search for one
// non-ASCII character.
const ASCII_ONLY = /^[^\u0080-\uffff]*$/;

interface Detector {
  readonly id: PiiSecretsDetectorId;
  readonly scan: Scanner;
}

// The scanners live in ./detectors, shared with the PII guardrail (which masks what they find).
const FIXED_SCANNERS: Readonly<Record<Exclude<PiiSecretsDetectorId, 'highEntropy'>, Scanner>> = {
  email: scanEmails,
  ssn: scanSsns,
  phone: scanPhones,
  creditCard: scanCards,
  awsAccessKey: scanAwsAccessKeys,
  privateKey: scanPrivateKeys,
  jwt: scanJwts,
  secretAssignment: scanSecretAssignments,
  vendorToken: scanVendorTokens,
  credentialUrl: scanCredentialUrls,
};

/** Denies text containing PII or credentials; detections are the ids of the detectors that fired. */
export function piiSecrets(options?: PiiSecretsOptions): PolicyEvaluator {
  const bag = readOptions(WHERE, options, KNOWN_OPTIONS);
  const name = readName(WHERE, bag.name, 'pii-secrets');
  const detectorIds = readEnumList(WHERE, 'detectors', bag.detectors, PII_SECRETS_DETECTOR_IDS, PII_SECRETS_DETECTOR_IDS);
  const phases = readPhases(WHERE, bag.phases, ['input', 'output']);
  const channels = readChannels(WHERE, bag.channels, ['answer', 'reasoning', 'object']);
  const holdBackChars = readHoldBackChars(WHERE, bag.holdBackChars) ?? DEFAULT_HOLD_BACK_CHARS;
  const isAllowlisted = compileAllowlist(bag.allowlist);
  const usesEntropy = detectorIds.includes('highEntropy');
  for (const field of ['entropyThreshold', 'minEntropyTokenLength'] as const) {
    if (!usesEntropy && bag[field] !== undefined) {
      // Accepting it would let a caller believe a threshold is in force when nothing reads it.
      throw new TypeError(`${WHERE}: ${field} applies only to the highEntropy detector, which is not selected`);
    }
  }
  const threshold = readEntropyThreshold(bag.entropyThreshold);
  const minLength = readInteger(
    WHERE,
    'minEntropyTokenLength',
    bag.minEntropyTokenLength,
    DEFAULT_MIN_ENTROPY_TOKEN_LENGTH,
    8,
    MAX_ENTROPY_TOKEN_LENGTH,
  );

  const detectors: readonly Detector[] = Object.freeze(
    detectorIds.map((id) => ({
      id,
      scan: id === 'highEntropy' ? highEntropyScanner(minLength, threshold) : FIXED_SCANNERS[id],
    })),
  );

  const evaluate = (text: string): PolicyDecision => {
    // Full-width digits and letters fold to ASCII under NFKC; scanning that form as well keeps
    // them from slipping past the ASCII classes. Pure-ASCII text (the common case) is scanned once.
    const normalized = ASCII_ONLY.test(text) ? text : text.normalize('NFKC');
    let detections: PiiSecretsDetectorId[] | undefined;
    for (const detector of detectors) {
      if (finds(detector, text, isAllowlisted) || (normalized !== text && finds(detector, normalized, isAllowlisted))) {
        (detections ??= []).push(detector.id);
      }
    }
    if (detections === undefined) return ALLOWED;
    return Object.freeze({ allowed: false, detections: Object.freeze(detections) });
  };

  return Object.freeze({ name, phases, channels, holdBackChars, detections: detectorIds, evaluate });
}

function finds(detector: Detector, text: string, isAllowlisted: ((value: string) => boolean) | undefined): boolean {
  if (isAllowlisted === undefined) return findsAny(detector.scan, text);
  return findsAny(detector.scan, text, (start, end) => !isAllowlisted(text.slice(start, end)));
}

/** The allowlist test, or undefined when nothing is exempt (the common case: no slicing per match). */
function compileAllowlist(value: unknown): ((candidate: string) => boolean) | undefined {
  if (value === undefined) return undefined;
  if (!Array.isArray(value)) throw new TypeError(`${WHERE}: allowlist must be an array, got ${describeType(value)}`);
  const exact = new Set<string>();
  const patterns: RegExp[] = [];
  for (let i = 0; i < value.length; i++) {
    const entry: unknown = value[i];
    if (typeof entry === 'string') {
      if (entry.length === 0) throw new TypeError(`${WHERE}: allowlist[${i}] must not be empty`);
      exact.add(entry);
    } else if (isRegExp(entry)) {
      const re = statelessCopy(entry);
      if (re.test('')) {
        throw new TypeError(`${WHERE}: allowlist[${i}] matches empty text, so it would exempt every detection`);
      }
      patterns.push(re);
    } else {
      throw new TypeError(`${WHERE}: allowlist[${i}] must be a string or a RegExp, got ${describeType(entry)}`);
    }
  }
  if (exact.size === 0 && patterns.length === 0) return undefined;
  return (candidate) => exact.has(candidate) || patterns.some((re) => re.test(candidate));
}

function readEntropyThreshold(value: unknown): number {
  if (value === undefined) return DEFAULT_ENTROPY_THRESHOLD;
  if (typeof value !== 'number') {
    throw new TypeError(`${WHERE}: entropyThreshold must be a number, got ${describeType(value)}`);
  }
  // Eight bits per character is the ceiling for any byte-sized alphabet; zero would flag every token.
  if (!(value > 0 && value <= 8)) throw new TypeError(`${WHERE}: entropyThreshold must be greater than 0 and at most 8`);
  return value;
}

