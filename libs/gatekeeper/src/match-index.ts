// Candidate policies for a call, found without scanning the bundle (issue 22). Each match field
// (agents, tools, tenants, environments) gets an index over its patterns; a call looks up its
// value in every field's index, takes the field that leaves the fewest candidates, and hands that
// superset of the matching policies, in bundle order, to the full match check. The index only
// narrows: whether a policy matches is still decided by `patternMatches`, so a lookup that keeps a
// policy too many costs time, never a different decision.

/** A match pattern compiled once: `*` → any present value, `prefix*` → a longer value with that prefix, else exact. */
export interface CompiledPattern {
  readonly any: boolean;
  readonly prefix?: string;
  readonly exact?: string;
}

export const MATCH_FIELDS = ['agents', 'tools', 'tenants', 'environments'] as const;
export type MatchField = (typeof MATCH_FIELDS)[number];

/** The call's value for each match field (`undefined`: the identity does not carry it). */
export type MatchValues = Readonly<Record<MatchField, string | undefined>>;

/** What the index needs of a policy: the patterns of the match fields it sets. */
export interface IndexablePolicy {
  readonly match: readonly { readonly field: MatchField; readonly patterns: readonly CompiledPattern[] }[];
}

/** One field's index; every list holds bundle positions, ascending. */
interface FieldIndex {
  /** Policies that do not set the field: candidates for any value, even none. */
  readonly unconstrained: readonly number[];
  /** Policies with a `*` pattern: candidates for any present value. */
  readonly wildcard: readonly number[];
  readonly exact: ReadonlyMap<string, readonly number[]>;
  readonly prefix: ReadonlyMap<string, readonly number[]>;
  /** The distinct prefix lengths, ascending: a lookup tries only these, not every length of the value. */
  readonly prefixLengths: readonly number[];
}

/** The bundle's policies (in evaluation order) and one index per match field. */
export interface MatchIndex<P extends IndexablePolicy> {
  readonly policies: readonly P[];
  readonly fields: Readonly<Record<MatchField, FieldIndex>>;
}

/** `*` matches any present value; `prefix*` a longer value starting with prefix; anything else exactly. */
export function compilePattern(pattern: string): CompiledPattern {
  if (pattern === '*') return { any: true };
  return pattern.endsWith('*') ? { any: false, prefix: pattern.slice(0, -1) } : { any: false, exact: pattern };
}

export function patternMatches(pattern: CompiledPattern, value: string | undefined): boolean {
  if (value === undefined) return false;
  if (pattern.any) return true;
  if (pattern.prefix !== undefined) return value.length > pattern.prefix.length && value.startsWith(pattern.prefix);
  return pattern.exact === value;
}

function push(map: Map<string, number[]>, key: string, position: number): void {
  const list = map.get(key);
  // A policy listing two patterns with one key (`a*`, `a*`) is kept once per bucket.
  if (list === undefined) map.set(key, [position]);
  else if (list[list.length - 1] !== position) list.push(position);
}

function indexField(policies: readonly IndexablePolicy[], field: MatchField): FieldIndex {
  const unconstrained: number[] = [];
  const wildcard: number[] = [];
  const exact = new Map<string, number[]>();
  const prefix = new Map<string, number[]>();
  policies.forEach((policy, position) => {
    const patterns = policy.match.find((m) => m.field === field)?.patterns;
    if (patterns === undefined) unconstrained.push(position);
    else if (patterns.some((p) => p.any)) wildcard.push(position);
    else {
      for (const p of patterns) {
        if (p.prefix !== undefined) push(prefix, p.prefix, position);
        else if (p.exact !== undefined) push(exact, p.exact, position);
      }
    }
  });
  const prefixLengths = [...new Set([...prefix.keys()].map((key) => key.length))].sort((a, b) => a - b);
  return { unconstrained, wildcard, exact, prefix, prefixLengths };
}

/** Builds the index over `policies`, which must already be in evaluation order. */
export function buildMatchIndex<P extends IndexablePolicy>(policies: readonly P[]): MatchIndex<P> {
  const fields = Object.fromEntries(MATCH_FIELDS.map((field) => [field, indexField(policies, field)])) as Record<MatchField, FieldIndex>;
  return { policies, fields };
}

/** The buckets that may hold a policy matching `value` on this field, and how many positions they hold. */
function bucketsFor(index: FieldIndex, value: string | undefined): { buckets: (readonly number[])[]; size: number } {
  const buckets: (readonly number[])[] = [index.unconstrained];
  if (value !== undefined) {
    buckets.push(index.wildcard);
    const exact = index.exact.get(value);
    if (exact !== undefined) buckets.push(exact);
    // A prefix pattern needs a strictly longer value (`svc1.*` does not match `svc1.`).
    for (const length of index.prefixLengths) {
      if (length >= value.length) break;
      const bucket = index.prefix.get(value.slice(0, length));
      if (bucket !== undefined) buckets.push(bucket);
    }
  }
  let size = 0;
  for (const bucket of buckets) size += bucket.length;
  return { buckets, size };
}

/** The union of sorted position lists, sorted and without repeats. */
function mergePositions(buckets: readonly (readonly number[])[]): number[] {
  const nonEmpty = buckets.filter((bucket) => bucket.length > 0);
  if (nonEmpty.length === 1) return nonEmpty[0] as number[];
  const all = nonEmpty.flat().sort((a, b) => a - b);
  return all.filter((position, i) => i === 0 || all[i - 1] !== position);
}

/**
 * A superset of the policies whose match block can match `values`, in bundle order: the buckets
 * of the most selective field. A value that is not a string (facts that skipped validation) gets
 * every policy, so the full match check meets exactly what a scan would.
 */
export function candidatePolicies<P extends IndexablePolicy>(index: MatchIndex<P>, values: MatchValues): readonly P[] {
  let best: { buckets: (readonly number[])[]; size: number } | undefined;
  for (const field of MATCH_FIELDS) {
    const value: unknown = values[field];
    if (value !== undefined && typeof value !== 'string') return index.policies;
    const found = bucketsFor(index.fields[field], value);
    if (best === undefined || found.size < best.size) best = found;
  }
  if (best === undefined || best.size >= index.policies.length) return index.policies;
  return mergePositions(best.buckets).map((position) => index.policies[position]!);
}
