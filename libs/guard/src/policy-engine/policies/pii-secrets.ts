import type { OutputChannel, PolicyDecision, PolicyEvaluator, PolicyPhase } from '../types.js';
import {
  describeType,
  isRegExp,
  readChannels,
  readEnumList,
  readHoldBackChars,
  readInteger,
  readName,
  readOptions,
  readPhases,
  statelessCopy,
} from './validation.js';

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
const MAX_ENTROPY_TOKEN_LENGTH = 4096;
const ALLOWED: PolicyDecision = Object.freeze({ allowed: true });
// Anchored whole-string test: V8 runs it about three times as fast as a search for one
// non-ASCII character.
const ASCII_ONLY = /^[^\u0080-\uffff]*$/;

interface Detector {
  readonly id: PiiSecretsDetectorId;
  /** Global, scanned with `exec` from `lastIndex` 0; shared by evaluators, safe because scans are synchronous. */
  readonly pattern: RegExp;
  /** A substring every match contains: a cheap `includes` skips the regex scan for most texts. */
  readonly prefilter?: string;
  /** Capture group holding the value the allowlist is checked against; the whole match by default. */
  readonly valueGroup?: number;
  /** A second opinion on a candidate the pattern cannot give (checksums, entropy, placeholders). */
  readonly accept?: (value: string) => boolean;
}

// Every quantifier below is bounded or over a single character class followed by nothing
// ambiguous, and every pattern that could start mid-token opens with a lookbehind (or consumes
// the separator before the token), so a scan is linear in the text whatever it contains.

const EMAIL: Detector = {
  id: 'email',
  pattern:
    /(?<![A-Za-z0-9._%+-])[A-Za-z0-9._%+-]{1,64}@(?:[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?\.){1,8}[A-Za-z]{2,24}(?![A-Za-z])/g,
  prefilter: '@',
};

// Dashed or spaced only: a bare nine-digit run is far more often an id or an amount than an SSN.
const SSN: Detector = {
  id: 'ssn',
  pattern: /(?<![\w-])(?!000|666|9\d\d)\d{3}([- ])(?!00)\d{2}\1(?!0000)\d{4}(?![\w-])/g,
};

// E.164 (`+` and 8-15 digits, single separators allowed) or North-American with a separator
// or parentheses. Neither may sit inside a longer digit run, so grouped card numbers and ids
// are left to the card detector.
const PHONE: Detector = {
  id: 'phone',
  pattern:
    /(?<![\w+]|\d[ .-])(?:\+[1-9](?:[ .-]?\d){7,14}|(?:\+?1[ .-]?)?(?:\([2-9]\d{2}\)[ .-]?|[2-9]\d{2}[ .-])[2-9]\d{2}[ .-]\d{4})(?!\w|[ .-]\d)/g,
};

const CARD_SEPARATORS = /[ -]/g;

// 13-19 digits, single spaces or dashes between them, Luhn-valid, in a major network's
// issuer range (see `issuerPlausible`). The lazy count stops at the first length not followed
// by more digits, or followed by an expiry date (`4111 1111 1111 1111 12/27`), which a greedy
// count would swallow.
const CREDIT_CARD: Detector = {
  id: 'creditCard',
  pattern: /(?<![\w.+-]|\d )[2-6](?:[ -]?\d){12,18}?(?=[ -]\d{1,2}\/\d|(?!\w|[.,]\d|[ -]\d))/g,
  accept: (value) => {
    const digits = value.replace(CARD_SEPARATORS, '');
    return issuerPlausible(digits) && luhnValid(digits);
  },
};

const AWS_ACCESS_KEY: Detector = {
  id: 'awsAccessKey',
  pattern: /(?<![A-Za-z0-9])(?:AKIA|ASIA|AGPA|AIDA|AROA|ANPA|ANVA|AIPA)[A-Z0-9]{16}(?![A-Za-z0-9])/g,
};

const PRIVATE_KEY: Detector = {
  id: 'privateKey',
  pattern: /-----BEGIN (?:(?:RSA|EC|DSA|OPENSSH|ENCRYPTED|PGP) )?PRIVATE KEY(?: BLOCK)?-----/g,
  prefilter: '-----BEGIN ',
};

// An unsigned token (`alg: none`) has an empty third segment and is still a credential.
const JWT: Detector = {
  id: 'jwt',
  pattern: /(?<![A-Za-z0-9_-])eyJ[A-Za-z0-9_-]{1,8192}\.eyJ[A-Za-z0-9_-]{1,8192}\.[A-Za-z0-9_-]{0,8192}/g,
  prefilter: 'eyJ',
};

// A secret-named key (anywhere in an identifier, so `DB_PASSWORD`, `githubToken` and
// `client_secret` all count; plurals such as `max_tokens` do not), an assignment operator
// (`=`, `:`, `:=`, `=>`, optionally after a closing quote) and a value of at least six
// characters, quoted or not. Group 1 is the value.
const SECRET_KEY = String.raw`(?:api[_-]?key|secret|passw(?:or)?d|passphrase|token|access[_-]?key(?:[_-]?id)?|private[_-]?key|credentials?)`;
const SECRET_KEY_SUFFIX = String.raw`(?:[_.-]?(?:(?:access[_.-]?)?key(?:[_.-]?id)?|secret))?`;
const ASSIGNMENT = String.raw`["'\x60]?[ \t]{0,3}(?::=|=>|[:=])[ \t]{0,3}["'\x60]?`;
const SECRET_VALUE = String.raw`([^\s"'\x60,;]{6,256})`;
const SECRET_ASSIGNMENT: Detector = {
  id: 'secretAssignment',
  pattern: new RegExp(SECRET_KEY + SECRET_KEY_SUFFIX + ASSIGNMENT + SECRET_VALUE, 'gi'),
  valueGroup: 1,
  accept: (value) => !looksLikePlaceholder(value),
};

const FIXED_DETECTORS: Readonly<Record<Exclude<PiiSecretsDetectorId, 'highEntropy'>, Detector>> = {
  email: EMAIL,
  ssn: SSN,
  phone: PHONE,
  creditCard: CREDIT_CARD,
  awsAccessKey: AWS_ACCESS_KEY,
  privateKey: PRIVATE_KEY,
  jwt: JWT,
  secretAssignment: SECRET_ASSIGNMENT,
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
    detectorIds.map((id) => (id === 'highEntropy' ? highEntropyDetector(minLength, threshold) : FIXED_DETECTORS[id])),
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

  return Object.freeze({ name, phases, channels, holdBackChars, evaluate });
}

function finds(detector: Detector, text: string, isAllowlisted: (value: string) => boolean): boolean {
  if (detector.prefilter !== undefined && !text.includes(detector.prefilter)) return false;
  const { pattern, valueGroup, accept } = detector;
  pattern.lastIndex = 0;
  let found = false;
  for (let match = pattern.exec(text); match !== null; match = pattern.exec(text)) {
    const value = (valueGroup === undefined ? undefined : match[valueGroup]) ?? match[0];
    if ((accept === undefined || accept(value)) && !isAllowlisted(value)) {
      found = true;
      break;
    }
  }
  pattern.lastIndex = 0;
  return found;
}

function compileAllowlist(value: unknown): (candidate: string) => boolean {
  if (value === undefined) return () => false;
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
  if (exact.size === 0 && patterns.length === 0) return () => false;
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

function highEntropyDetector(minLength: number, threshold: number): Detector {
  return {
    id: 'highEntropy',
    // `=` only as trailing base64 padding: inside a run it is the `key=value` of a log line.
    // The run start is found by consuming the character before it (group 1 is the token):
    // V8 scans that form markedly faster than a leading lookbehind.
    pattern: new RegExp(`(?:^|[^A-Za-z0-9+/_-])([A-Za-z0-9+/_-]{${minLength},${MAX_ENTROPY_TOKEN_LENGTH}}={0,2})`, 'g'),
    valueGroup: 1,
    accept: (token) => HAS_DIGIT.test(token) && HAS_LETTER.test(token) && !wordy(token) && entropy(token) >= threshold,
  };
}

const HAS_DIGIT = /\d/;
const HAS_LETTER = /[A-Za-z]/;

// Slugs, paths and snake_case names (`/var/log/app-2024-01-15`, `the-quick-brown-fox-1`) can
// reach 4 bits per character; every segment being a plain word or number gives them away,
// where a random key mixes letter case and digits within a segment. A loop, not a RegExp:
// the obvious pattern has overlapping alternatives that backtrack exponentially.
function wordy(token: string): boolean {
  let start = 0;
  for (let i = 0; i <= token.length; i++) {
    if (i === token.length || isTokenSeparator(token.charCodeAt(i))) {
      if (i > start && !plainSegment(token, start, i)) return false;
      start = i + 1;
    }
  }
  return true;
}

function isTokenSeparator(code: number): boolean {
  return code === 45 || code === 95 || code === 47 || code === 43 || code === 61; // - _ / + =
}

/** All digits, all lower case, all upper case, or one capital followed by lower case. */
function plainSegment(token: string, start: number, end: number): boolean {
  let lower = 0;
  let upper = 0;
  let digits = 0;
  let innerCapital = false;
  for (let i = start; i < end; i++) {
    const code = token.charCodeAt(i);
    if (code >= 97 && code <= 122) lower++;
    else if (code >= 65 && code <= 90) {
      upper++;
      if (i > start) innerCapital = true;
    } else digits++;
  }
  if (digits > 0) return lower === 0 && upper === 0;
  return lower === 0 || upper === 0 || !innerCapital;
}

// Scratch counts for `entropy`: reset by the same loop that reads them, so no state outlives a call.
const COUNTS = new Uint32Array(128);

/** Shannon entropy of `token` (ASCII only) in bits per character. */
function entropy(token: string): number {
  const n = token.length;
  for (let i = 0; i < n; i++) COUNTS[token.charCodeAt(i) & 127]! += 1;
  let sum = 0;
  for (let i = 0; i < n; i++) {
    const code = token.charCodeAt(i) & 127;
    const count = COUNTS[code]!;
    if (count > 0) {
      sum += count * Math.log2(count);
      COUNTS[code] = 0;
    }
  }
  return Math.log2(n) - sum / n;
}

// Amex, Diners and JCB start with 3, Visa with 4, Mastercard and Maestro with 5 or 2221-2720,
// Discover and UnionPay with 6. Leaving out 1 and the rest of 2 keeps millisecond timestamps
// (`1718000000121`) and runs of years (`2023 2024 2025 2026`) from passing on a lucky checksum.
function issuerPlausible(digits: string): boolean {
  const first = digits.charCodeAt(0) - 48;
  if (first >= 3 && first <= 6) return true;
  const prefix = Number(digits.slice(0, 4));
  return prefix >= 2221 && prefix <= 2720;
}

/** Luhn checksum over a string of ASCII digits. */
function luhnValid(digits: string): boolean {
  let sum = 0;
  let double = false;
  for (let i = digits.length - 1; i >= 0; i--) {
    const digit = digits.charCodeAt(i) - 48;
    if (double) sum += digit > 4 ? digit * 2 - 9 : digit * 2;
    else sum += digit;
    double = !double;
  }
  return sum % 10 === 0;
}

const REFERENCE_VALUE = /^(?:\$\{|\$\(|\$[A-Z_][A-Z0-9_]*$|\{\{|<|%[({]|(?:process\.env|os\.environ|os\.getenv)\b)/;
const CODE_VALUE = /^[A-Za-z_$][\w$]*(?:(?:\.[A-Za-z_$][\w$]*)+(?:[([]|$)|[([])/;
const MASKED_VALUE = /^(?:\*+|x+|•+|\.+)$/i;
const TYPE_WORDS = new Set(['string', 'number', 'boolean', 'undefined', 'null', 'none', 'object', 'unknown', 'optional', 'required']);

// A value that names where the secret comes from (`${API_KEY}`, `process.env.TOKEN`,
// `getToken()`), a type annotation (`password: string`) or a mask (`********`) holds no secret.
function looksLikePlaceholder(value: string): boolean {
  return (
    REFERENCE_VALUE.test(value) ||
    CODE_VALUE.test(value) ||
    MASKED_VALUE.test(value) ||
    TYPE_WORDS.has(value.toLowerCase())
  );
}
