import { type PolicySnapshot } from './evaluate.js';
import { type NormalizedText, type TextLike } from './normalized-view.js';

const SPACE = /\s/;

// Whitespace by code: ASCII by table, anything else by the Unicode class.
function isSpace(code: number): boolean {
  if (code < 128) return code === 32 || (code >= 9 && code <= 13);
  return SPACE.test(String.fromCharCode(code));
}

/** Start of the run of non-whitespace characters that ends at `end` (exclusive). */
export function tokenRunStart(text: TextLike, end: number): number {
  let i = end;
  while (i > 0 && !isSpace(text.charCodeAt(i - 1))) i -= 1;
  return i;
}

/**
 * Where a bounded policy must start reading to see every match that could end after
 * `judgedUpTo`: back by its window, and further back to the start of the token it cuts.
 */
export function windowStart(text: TextLike, judgedUpTo: number, window: number): number {
  if (judgedUpTo <= 0) return 0;
  return Math.max(0, Math.min(judgedUpTo - window, tokenRunStart(text, judgedUpTo)));
}

/**
 * How much of a segment may be shown once every policy judged it: nothing a later match
 * could still include. An unbounded policy holds the whole segment until it is final.
 */
export function releasableLength(text: TextLike, policies: readonly PolicySnapshot[]): number {
  if (policies.length === 0) return text.length;
  let limit = text.length;
  for (const policy of policies) {
    if (policy.window === undefined) return 0;
    limit = Math.min(limit, text.length - policy.window);
  }
  if (limit <= 0) return 0;
  // Never cut a token: keep the whole trailing non-whitespace run held.
  return Math.min(limit, tokenRunStart(text, text.length));
}

/**
 * How much of the source may be shown: for the policies that read the normalized view, what
 * `releasableLength` allows of the view, mapped back to the source offset where the first
 * unreleased view character starts; for those that read the source, what it allows of the source.
 * The smaller of the two.
 */
export function releasableSource(text: NormalizedText, viewPolicies: readonly PolicySnapshot[], sourcePolicies: readonly PolicySnapshot[]): number {
  const whole = text.written.length;
  const fromView = viewPolicies.length === 0 ? whole : text.sourceOffset(releasableLength(text.view, viewPolicies));
  const fromSource = sourcePolicies.length === 0 ? whole : releasableLength(text.written, sourcePolicies);
  return Math.min(fromView, fromSource);
}
