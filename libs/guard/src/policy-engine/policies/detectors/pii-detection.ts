// Personal-data detection shared by `piiSecrets` (which denies) and the PII guardrail (which
// masks): one implementation of e-mail, phone, card, SSN and IPv4 matching.
//
// Every quantifier below is bounded or over a single character class followed by nothing
// ambiguous, and every pattern that could start mid-token opens with a lookbehind, so a scan
// is linear in the text whatever it contains.
import { regexScanner, type MatchVisitor, type Scanner } from './scan.js';

// A user right after `://` is a URL's user name (`postgres://app@db.internal:5432`), not a mailbox.
/** E-mail addresses: a local part, `@`, one to eight dot-separated labels and a top-level domain. */
export const scanEmails: Scanner = regexScanner(
  /(?<![A-Za-z0-9._%+-])[A-Za-z0-9._%+-]{1,64}@(?:[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?\.){1,8}[A-Za-z]{2,24}(?![A-Za-z])/g,
  { prefilter: '@', accept: (_value, text, start) => !(start >= 3 && text.startsWith('://', start - 3)) },
);

// Dashed or spaced only: a bare nine-digit run is far more often an id or an amount than an SSN.
/** US social security numbers, dashed or spaced, outside the never-issued ranges. */
export const scanSsns: Scanner = regexScanner(
  /(?<![\w-])(?!000|666|9\d\d)\d{3}([- ])(?!00)\d{2}\1(?!0000)\d{4}(?![\w-])/g,
);

// E.164 (`+` and 8-15 digits, single separators allowed) or North-American with a separator
// or parentheses. A number beside it and a space (`room 12 (415) 555-2671`, `call 2 +1 ...`)
// does not hide it; one joined by a dash or a dot (`1234-212-555-0123-99`) is part of a
// longer dashed token such as an id, and does.
/** Phone numbers: E.164, or North-American with separators or parentheses. */
export const scanPhones: Scanner = regexScanner(
  /(?<![\w+]|\d[.-])(?:\+[1-9](?:[ .-]?\d){7,14}|(?:\+?1[ .-]?)?(?:\([2-9]\d{2}\)[ .-]?|[2-9]\d{2}[ .-])[2-9]\d{2}[ .-]\d{4})(?!\w|[.-]\d)/g,
);

const OCTET = '(?:25[0-5]|2[0-4]\\d|1\\d\\d|[1-9]?\\d)';
/** Dotted-quad IPv4 addresses, not inside a longer dotted number. */
export const scanIpv4s: Scanner = regexScanner(new RegExp(`(?<![\\d.])${OCTET}(?:\\.${OCTET}){3}(?!\\.?\\d)`, 'g'));

// A digit run: digits with single spaces or dashes between them, at least 13 of them, found
// from its first digit. A run is not started right after a letter, `_`, `.`, `+` or `-`: that
// group continues another token (a hex id, a decimal fraction, a signed or dashed number), and
// the run starts at the next group instead. The first thirteen steps are spelled out: V8 fails
// the many short numbers of ordinary text about three times as fast that way as with a counted
// repeat. The open-ended tail is one unambiguous step, so a run is matched once, whole.
const DIGIT_RUN = new RegExp(String.raw`(?<![\w.+-])\d${String.raw`[ -]?\d`.repeat(12)}(?:[ -]?\d)*`, 'g');
const MIN_CARD_DIGITS = 13;
const MAX_CARD_DIGITS = 19;

/**
 * Card numbers. Every digit run is split into its groups (the digits between separators) and
 * every sequence of whole groups holding 13-19 digits is a candidate; one in a major network's
 * issuer range that passes the Luhn check is a card. So a number beside the card in the same
 * run (`2 4111 1111 1111 1111`, `4111 1111 1111 1111 123`, `item 42 4111111111111111`) no
 * longer hides it. Candidates never split a group: a 22-digit id holds no card. A candidate
 * must also be written the way cards are (one group, groups of four, or Amex/Diners 4-6-5 /
 * 4-6-4), which keeps lists of small numbers and dates from passing on a lucky checksum; only
 * a run that is all one candidate may be grouped some other way (`41 11 11 ...`). A group glued to a letter, `_`, `.`, `+` or `-` before it, or to
 * a letter or a decimal part after it (`0.4111...`, `4111...abc`, `4111...,50`), belongs to
 * another token and takes no part.
 */
export const scanCards: Scanner = (text, visit) => {
  DIGIT_RUN.lastIndex = 0;
  try {
    for (let run = DIGIT_RUN.exec(text); run !== null; run = DIGIT_RUN.exec(text)) {
      if (scanRun(text, run.index, run.index + run[0].length, visit)) return;
    }
  } finally {
    DIGIT_RUN.lastIndex = 0;
  }
};

/** Visits the cards in the run text[from, to); true when the visitor asked to stop. */
function scanRun(text: string, from: number, to: number, visit: MatchVisitor): boolean {
  // Group g spans text[starts[g], ends[g]) and digits[offsets[g], offsets[g] + ends[g] - starts[g]).
  const starts: number[] = [];
  const ends: number[] = [];
  const offsets: number[] = [];
  let digits = '';
  let groupStart = from;
  for (let i = from; i <= to; i++) {
    if (i === to || !isDigit(text.charCodeAt(i))) {
      starts.push(groupStart);
      ends.push(i);
      offsets.push(digits.length);
      digits += text.slice(groupStart, i);
      groupStart = i + 1;
    }
  }
  // The pattern never starts a run glued to what precedes it, so only its end can be glued.
  const last = gluedAfter(text, to) ? starts.length - 2 : starts.length - 1;
  let found = false;
  for (let i = 0; i <= last; i++) {
    let count = 0;
    for (let j = i; j <= last; j++) {
      count += ends[j]! - starts[j]!;
      if (count > MAX_CARD_DIGITS) break;
      if (count < MIN_CARD_DIGITS || !cardLayout(starts, ends, i, j)) continue;
      const at = offsets[i]!;
      if (issuerPlausible(digits, at) && luhn(digits, at, at + count)) {
        if (visit(starts[i]!, ends[j]!) === true) return true;
        found = true;
        i = j; // the next candidate starts after this card
        break;
      }
    }
  }
  if (found || last < 0) return false;
  // Grouped some other way, the run is a card only if all of it is one.
  const count = offsets[last]! + ends[last]! - starts[last]!;
  if (count < MIN_CARD_DIGITS || count > MAX_CARD_DIGITS || !issuerPlausible(digits, 0) || !luhn(digits, 0, count)) {
    return false;
  }
  return visit(starts[0]!, ends[last]!) === true;
}

function isDigit(code: number): boolean {
  return code >= 48 && code <= 57;
}

function isWordCode(code: number): boolean {
  return isDigit(code) || (code >= 65 && code <= 90) || (code >= 97 && code <= 122) || code === 95;
}

// A run followed by a letter, or by `.`/`,` and a digit, ends inside another token.
function gluedAfter(text: string, to: number): boolean {
  if (to >= text.length) return false;
  const code = text.charCodeAt(to);
  if (isWordCode(code)) return true;
  return (code === 46 || code === 44) && to + 1 < text.length && isDigit(text.charCodeAt(to + 1));
}

/** Groups i..j as cards are printed: one group, fours (the last 1-4), or 4-6-5 / 4-6-4. */
function cardLayout(starts: readonly number[], ends: readonly number[], i: number, j: number): boolean {
  if (i === j) return true;
  const length = (g: number) => ends[g]! - starts[g]!;
  let fours = true;
  for (let g = i; g < j; g++) if (length(g) !== 4) fours = false;
  if (fours && length(j) <= 4) return true;
  return j === i + 2 && length(i) === 4 && length(i + 1) === 6 && (length(j) === 5 || length(j) === 4);
}

// Amex, Diners and JCB start with 3, Visa with 4, Mastercard and Maestro with 5 or 2221-2720,
// Discover and UnionPay with 6. Leaving out 1 and the rest of 2 keeps millisecond timestamps
// (`1718000000121`) and runs of years (`2023 2024 2025 2026`) from passing on a lucky checksum.
function issuerPlausible(digits: string, at: number): boolean {
  const first = digits.charCodeAt(at) - 48;
  if (first >= 3 && first <= 6) return true;
  const prefix = Number(digits.slice(at, at + 4));
  return prefix >= 2221 && prefix <= 2720;
}

/** Luhn checksum over digits[from, to) (ASCII digits). */
function luhn(digits: string, from: number, to: number): boolean {
  let sum = 0;
  let double = false;
  for (let i = to - 1; i >= from; i--) {
    const digit = digits.charCodeAt(i) - 48;
    if (double) sum += digit > 4 ? digit * 2 - 9 : digit * 2;
    else sum += digit;
    double = !double;
  }
  return sum % 10 === 0;
}

const CARD_DIGITS = /^\d{13,19}$/;

/** The Luhn checksum over a string of 13 to 19 ASCII digits (anything else is not a card: false). */
export function luhnValid(digits: string): boolean {
  return CARD_DIGITS.test(digits) && luhn(digits, 0, digits.length);
}
