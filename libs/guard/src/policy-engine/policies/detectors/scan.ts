// The one shape every detector scans in: it reports each match as [start, end) offsets into
// the text it was given, so a policy can deny on the first and a guardrail can mask them all.
// Detectors take a plain string, so a caller can run them on any view of a text (raw, NFKC,
// folded) and map the offsets back itself.

/** Called with a match's [start, end) offsets, in text order; returning true stops the scan. */
export type MatchVisitor = (start: number, end: number) => boolean | void;

/** Scans `text` for one kind of match, calling `visit` on each. Synchronous and stateless between calls. */
export type Scanner = (text: string, visit: MatchVisitor) => void;

/** A match's [start, end) offsets. */
export interface TextMatch {
  readonly start: number;
  readonly end: number;
}

/** Every match `scan` reports on `text`, in order. */
export function findAll(scan: Scanner, text: string): TextMatch[] {
  const matches: TextMatch[] = [];
  scan(text, (start, end) => {
    matches.push({ start, end });
  });
  return matches;
}

/** Whether `scan` reports any match on `text` that `keep` (default: every match) accepts. */
export function findsAny(scan: Scanner, text: string, keep?: (start: number, end: number) => boolean): boolean {
  let found = false;
  scan(text, (start, end) => {
    if (keep !== undefined && !keep(start, end)) return false;
    found = true;
    return true;
  });
  return found;
}

export interface RegexScannerOptions {
  /** A substring every match contains: a cheap `includes` skips the regex scan for most texts. */
  readonly prefilter?: string;
  /**
   * Capture group that is the reported match; it must end the pattern's match (so its offsets
   * follow from the match's end without the slower `d` flag). The whole match by default.
   */
  readonly group?: number;
  /** A second opinion on a candidate the pattern cannot give (checksums, entropy, placeholders). */
  readonly accept?: (value: string, text: string, start: number) => boolean;
}

/**
 * A scanner over a global RegExp, run with `exec` from `lastIndex` 0. The RegExp may be shared
 * by every scanner built on it: scans are synchronous and leave `lastIndex` at 0.
 */
export function regexScanner(pattern: RegExp, options: RegexScannerOptions = {}): Scanner {
  if (!pattern.global) throw new TypeError('regexScanner: the pattern must be global');
  const { prefilter, group, accept } = options;
  return (text, visit) => {
    if (prefilter !== undefined && !text.includes(prefilter)) return;
    pattern.lastIndex = 0;
    try {
      for (let match = pattern.exec(text); match !== null; match = pattern.exec(text)) {
        const value = (group === undefined ? undefined : match[group]) ?? match[0];
        const end = match.index + match[0].length;
        const start = end - value.length;
        if ((accept === undefined || accept(value, text, start)) && visit(start, end) === true) return;
      }
    } finally {
      pattern.lastIndex = 0;
    }
  };
}
