import { createHash } from 'node:crypto';
import { z } from 'zod';
import { canonicalJson } from './json.js';

/**
 * Tamper evidence: each producer (a guard instance, a service) numbers its events and links
 * each to the digest of its predecessor, so a verifier can find gaps, reorderings,
 * duplicates and altered events per producer.
 */
export const ChainLinkSchema = z.object({
  /** Stable id of the producing stream, e.g. `guard:support-bot/7f3a`. */
  producer: z.string().min(1).max(256),
  /** 1 for the producer's first event, then +1 per event. */
  seq: z.number().int().min(1),
  /** `eventDigest` of the producer's previous event; null for seq 1. */
  prevHash: z.string().regex(/^[\da-f]{64}$/, 'must be a hex sha-256').nullable(),
});
export type ChainLink = z.infer<typeof ChainLinkSchema>;

/** The digest a successor links to: sha-256 over the canonical JSON of the whole event. */
export function eventDigest(event: unknown): string {
  return createHash('sha256').update(canonicalJson(event)).digest('hex');
}

/** One finding of `verifyAuditChain`; `position` is where it was read (topic/partition/offset or file:line). */
export type ChainFinding =
  | { readonly kind: 'gap'; readonly producer: string; readonly missingFrom: number; readonly missingTo: number; readonly position: string }
  | { readonly kind: 'reordered'; readonly producer: string; readonly seq: number; readonly afterSeq: number; readonly position: string }
  | { readonly kind: 'duplicate'; readonly producer: string; readonly seq: number; readonly id: string; readonly position: string }
  | { readonly kind: 'altered'; readonly producer: string; readonly seq: number; readonly position: string };

export interface ChainReport {
  readonly ok: boolean;
  readonly events: number;
  /** Events that carry no chain link (not verifiable). */
  readonly unchained: number;
  readonly producers: readonly { readonly producer: string; readonly events: number; readonly firstSeq: number; readonly lastSeq: number }[];
  readonly findings: readonly ChainFinding[];
}

interface Seen {
  readonly id: string;
  readonly digest: string;
  readonly prevHash: string | null;
  readonly position: string;
}

/**
 * Checks producers' hash chains in read order: a missing sequence number is a gap, a number
 * lower than one already read is a reordering, the same number read twice is a duplicate
 * (or, with other content, an alteration), and an event whose digest its successor does not
 * link to was altered. The last event of a stream is protected only once a successor exists
 * (or a checkpoint lists it). Checkpoints are skipped: `events` counts decisions.
 */
export function verifyAuditChain(records: Iterable<{ readonly event: unknown; readonly position: string }>): ChainReport {
  const streams = new Map<string, Map<number, Seen>>();
  const lastRead = new Map<string, number>();
  const findings: ChainFinding[] = [];
  let events = 0;
  let unchained = 0;
  for (const { event, position } of records) {
    // A producer's signed checkpoints are not links of its chain: `verifyAuditSources` reads them.
    if ((event as { type?: unknown } | null)?.type === 'AuditChainCheckpoint') continue;
    events += 1;
    const parsed = ChainLinkSchema.safeParse((event as { chain?: unknown } | null)?.chain);
    const id = String((event as { id?: unknown } | null)?.id ?? '');
    if (!parsed.success) {
      unchained += 1;
      continue;
    }
    const { producer, seq, prevHash } = parsed.data;
    let stream = streams.get(producer);
    if (!stream) {
      stream = new Map();
      streams.set(producer, stream);
    }
    const digest = eventDigest(event);
    const earlier = stream.get(seq);
    if (earlier) {
      findings.push(earlier.digest === digest ? { kind: 'duplicate', producer, seq, id, position } : { kind: 'altered', producer, seq, position });
      continue;
    }
    const last = lastRead.get(producer);
    if (last !== undefined && seq < last) findings.push({ kind: 'reordered', producer, seq, afterSeq: last, position });
    lastRead.set(producer, Math.max(last ?? 0, seq));
    stream.set(seq, { id, digest, prevHash, position });
  }
  const producers = [];
  for (const [producer, stream] of streams) {
    const seqs = [...stream.keys()].sort((a, b) => a - b);
    const firstSeq = seqs[0] ?? 0;
    const lastSeq = seqs.at(-1) ?? 0;
    producers.push({ producer, events: stream.size, firstSeq, lastSeq });
    for (let i = 0; i < seqs.length; i += 1) {
      const seq = seqs[i] as number;
      const current = stream.get(seq) as Seen;
      const previous = stream.get(seq - 1);
      if (seq > firstSeq && !previous) {
        const before = seqs[i - 1] as number;
        findings.push({ kind: 'gap', producer, missingFrom: before + 1, missingTo: seq - 1, position: current.position });
      }
      if (previous && current.prevHash !== previous.digest) findings.push({ kind: 'altered', producer, seq: seq - 1, position: previous.position });
      if (seq === 1 && current.prevHash !== null) findings.push({ kind: 'altered', producer, seq, position: current.position });
    }
  }
  return Object.freeze({ ok: findings.length === 0, events, unchained, producers, findings });
}
