import { type PolicySnapshot } from './evaluate.js';

/** Start of the run of non-whitespace characters that ends at `end` (exclusive). */
export function tokenRunStart(text: string, end: number): number {
  let i = end;
  while (i > 0 && !/\s/.test(text.charAt(i - 1))) i -= 1;
  return i;
}

/**
 * Where a bounded policy must start reading to see every match that could end after
 * `judgedUpTo`: back by its window, and further back to the start of the token it cuts.
 */
export function windowStart(text: string, judgedUpTo: number, window: number): number {
  if (judgedUpTo <= 0) return 0;
  return Math.max(0, Math.min(judgedUpTo - window, tokenRunStart(text, judgedUpTo)));
}

/**
 * How much of a segment may be shown once every policy judged it: nothing a later match
 * could still include. An unbounded policy holds the whole segment until it is final.
 */
export function releasableLength(text: string, policies: readonly PolicySnapshot[]): number {
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
