// High-entropy tokens: a run of base64/base64url characters that mixes letters and digits,
// is not built from words, is not a known digest encoding, and measures at least the
// threshold in Shannon bits per character. What is left out, and why:
// - Hex (digests, commit SHAs, UUIDs, with or without dashes) is measured without its
//   separators, so it never exceeds 4 bits per character: at the default threshold of 4 a
//   hex token is never flagged, and a caller who lowers the threshold to catch hex keys
//   accepts that digests, which look the same, are caught with them.
// - Subresource-integrity digests (`sha256-`, `sha384-`, `sha512-`, `sha1-` and exactly the
//   base64 length of that digest, as in package-lock.json and yarn.lock) and Go checksums
//   (`h1:` and the base64 of a SHA-256) are hashes of public content.
// - The payload of a `data:<mime>;base64,` URL is an embedded file (an image, a font).
// - Identifiers: every segment between `-`, `_`, `/`, `+` and `=` is a plain word or number,
//   or camelCase words with at most two numbers (`toUtf8Base64String`; see `camelSegment`).
import { regexScanner, type Scanner } from './scan.js';

/** Longest token judged; a longer run is judged by its first this many characters. */
export const MAX_ENTROPY_TOKEN_LENGTH = 4096;

/** A scanner for tokens of at least `minLength` characters measuring `threshold` bits per character or more. */
export function highEntropyScanner(minLength: number, threshold: number): Scanner {
  // `=` only as trailing base64 padding: inside a run it is the `key=value` of a log line.
  // The run start is found by consuming the character before it (group 1 is the token):
  // V8 scans that form markedly faster than a leading lookbehind.
  const pattern = new RegExp(`(?:^|[^A-Za-z0-9+/_-])([A-Za-z0-9+/_-]{${minLength},${MAX_ENTROPY_TOKEN_LENGTH}}={0,2})`, 'g');
  return regexScanner(pattern, {
    group: 1,
    accept: (token, text, start) => {
      if (!HAS_DIGIT.test(token) || !HAS_LETTER.test(token)) return false;
      // Hex is the commonest long token in logs and JSON (digests, ids): settled by entropy alone.
      if (HEX_SHAPED.test(token)) return entropy(token, true) >= threshold;
      return !wordy(token) && !encodedDigest(token, text, start) && !dataUrlPayload(text, start) && entropy(token, false) >= threshold;
    },
  });
}

const HAS_DIGIT = /\d/;
const HAS_LETTER = /[A-Za-z]/;

// Each is `<algorithm>-` and the base64 of exactly that digest's length, padding included.
const SRI_DIGEST = /^(?:sha1-[A-Za-z0-9+/]{27}=|sha256-[A-Za-z0-9+/]{43}=|sha384-[A-Za-z0-9+/]{64}|sha512-[A-Za-z0-9+/]{86}==)$/;
const GO_SUM_DIGEST = /^[A-Za-z0-9+/]{43}=$/;

function encodedDigest(token: string, text: string, start: number): boolean {
  if (token.startsWith('sha')) return SRI_DIGEST.test(token);
  return start >= 3 && text.startsWith('h1:', start - 3) && GO_SUM_DIGEST.test(token);
}

const BASE64_MARK = ';base64,';
// Long enough for any registered media type and a parameter or two (`;charset=utf-8`).
const MAX_DATA_URL_HEAD = 160;
const DATA_URL_HEAD = /^data:[A-Za-z]+\/[\w.+-]+(?:;[\w.+-]+=[\w.+-]+)*;base64,$/;

function dataUrlPayload(text: string, start: number): boolean {
  if (start < BASE64_MARK.length + 5 || !text.startsWith(BASE64_MARK, start - BASE64_MARK.length)) return false;
  const head = text.lastIndexOf('data:', start - BASE64_MARK.length);
  return head !== -1 && start - head <= MAX_DATA_URL_HEAD && DATA_URL_HEAD.test(text.slice(head, start));
}

// Slugs, paths, snake_case and camelCase names (`/var/log/app-2024-01-15`,
// `the-quick-brown-fox-1`, `parseSha256Header`) can reach 4 bits per character; every segment
// being made of words gives them away, where a random key mixes letter case and digits within
// a segment. A loop, not a RegExp: the obvious pattern has overlapping alternatives that
// backtrack exponentially.
function wordy(token: string): boolean {
  let start = 0;
  for (let i = 0; i <= token.length; i++) {
    if (i === token.length || isTokenSeparator(token.charCodeAt(i))) {
      if (i > start && !plainSegment(token, start, i) && !camelSegment(token, start, i)) return false;
      start = i + 1;
    }
  }
  return true;
}

function isTokenSeparator(code: number): boolean {
  return code === 45 || code === 95 || code === 47 || code === 43 || code === 61; // - _ / + =
}

const isLower = (code: number) => code >= 97 && code <= 122;
const isUpper = (code: number) => code >= 65 && code <= 90;

/** All digits, all lower case, all upper case, or one capital followed by lower case. */
function plainSegment(token: string, start: number, end: number): boolean {
  let lower = 0;
  let upper = 0;
  let digits = 0;
  let innerCapital = false;
  for (let i = start; i < end; i++) {
    const code = token.charCodeAt(i);
    if (isLower(code)) lower++;
    else if (isUpper(code)) {
      upper++;
      if (i > start) innerCapital = true;
    } else digits++;
  }
  if (digits > 0) return lower === 0 && upper === 0;
  return lower === 0 || upper === 0 || !innerCapital;
}

/** Whether `name` is camelCase words (`passwordFile`, `toUtf8Base64String`), not a random mix of cases. */
export function camelCaseWords(name: string): boolean {
  return camelSegment(name, 0, name.length);
}

/**
 * camelCase words: split at case changes (`HTTPServer` is `HTTP` and `Server`) and digits,
 * the letter pieces average 3.5 letters or more, at most one is a single letter, at most two
 * pieces are numbers, at most 40% of the letters are capitals, and a quarter or more of the
 * lower-case letters are vowels, as in words. Measured on random base62 tokens of 24-48
 * characters holding a digit, about one in 4,000 passes: a random key's case flips every
 * character or two, and its vowels are a fifth of its letters.
 */
function camelSegment(token: string, start: number, end: number): boolean {
  let letterPieces = 0;
  let singles = 0;
  let numbers = 0;
  let piece = 0; // letters in the current piece
  let lower = 0;
  let upper = 0;
  let vowels = 0;
  for (let i = start; i <= end; i++) {
    const code = i < end ? token.charCodeAt(i) : 0;
    const isLowerCase = isLower(code);
    const isUpperCase = isUpper(code);
    const previous = i > start ? token.charCodeAt(i - 1) : 0;
    const next = i + 1 < end ? token.charCodeAt(i + 1) : 0;
    // A piece ends at a digit or the end, before a capital after lower case, and before the
    // capital that starts a word after an acronym.
    const boundary =
      (!isLowerCase && !isUpperCase) || (isUpperCase && (isLower(previous) || (isUpper(previous) && isLower(next))));
    if (boundary && piece > 0) {
      letterPieces++;
      if (piece === 1) singles++;
      piece = 0;
    }
    if (i === end) break;
    if (!isLowerCase && !isUpperCase) {
      if (i === start || isLower(previous) || isUpper(previous)) numbers++;
      continue;
    }
    piece++;
    if (isUpperCase) upper++;
    else {
      lower++;
      if (isVowel(code)) vowels++;
    }
  }
  const letters = lower + upper;
  return (
    lower > 0 &&
    letterPieces >= 2 &&
    numbers <= 2 &&
    singles <= 1 &&
    letters >= 3.5 * letterPieces &&
    upper <= 0.4 * letters &&
    vowels >= 0.25 * lower
  );
}

// a e i o u y
const isVowel = (code: number) => code === 97 || code === 101 || code === 105 || code === 111 || code === 117 || code === 121;

// Lower or upper case hex, dashed or not: measured on its digits alone.
const HEX_SHAPED = /^(?:[0-9a-f_-]+|[0-9A-F_-]+)$/;

// Scratch counts for `entropy`: reset by the same loop that reads them, so no state outlives a call.
const COUNTS = new Uint32Array(128);

/** Shannon entropy of `token` (ASCII only) in bits per character, leaving out `-` and `_` when asked. */
function entropy(token: string, skipSeparators: boolean): number {
  let n = 0;
  for (let i = 0; i < token.length; i++) {
    const code = token.charCodeAt(i) & 127;
    if (skipSeparators && (code === 45 || code === 95)) continue;
    COUNTS[code]! += 1;
    n++;
  }
  if (n === 0) return 0;
  let sum = 0;
  for (let i = 0; i < token.length; i++) {
    const code = token.charCodeAt(i) & 127;
    const count = COUNTS[code]!;
    if (count > 0) {
      sum += count * Math.log2(count);
      COUNTS[code] = 0;
    }
  }
  return Math.log2(n) - sum / n;
}
