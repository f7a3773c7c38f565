import { randomUUID } from 'node:crypto';
import { type AgentKey, type AuditChainCheckpoint, auditCheckpoint, eventDigest, MAX_CHECKPOINT_DIGESTS, type SigningKey } from '@gatehouse/contracts';

export interface AuditCheckpointerOptions {
  /** Signs every checkpoint: a granting service's signing key, or an agent's claim key. */
  readonly key: SigningKey | AgentKey;
  /** Envelope source of the records covered, and of the checkpoints (`service:<name>`, `guard:<name>`). */
  readonly source: string;
  /** The stream the checkpoints name: the records' `chain.producer` when they are chained (default `<source>#<random>`). */
  readonly producer?: string;
  /** A checkpoint once this many acknowledged records wait for one (1 to 1,000). Default 100. */
  readonly every?: number;
  /** At the latest this long after the first of them was acknowledged, ms. Default 1,000. */
  readonly intervalMs?: number;
  /** Appends a checkpoint to the audit topic; resolves once the broker acknowledged it. */
  readonly append: (checkpoint: AuditChainCheckpoint) => Promise<unknown>;
  /** A checkpoint the timer wrote could not be appended (its records go into the next one). */
  readonly onError?: (error: unknown) => void;
}

const OPTION_KEYS: ReadonlySet<string> = new Set(['key', 'source', 'producer', 'every', 'intervalMs', 'append', 'onError']);

interface Covered {
  readonly digest: string;
  readonly seq?: number;
}

function bounded(value: unknown, name: string, min: number, max: number): number {
  if (typeof value !== 'number' || !Number.isSafeInteger(value) || value < min || value > max) {
    throw new TypeError(`auditCheckpointer ${name} must be an integer from ${min} to ${max}`);
  }
  return value;
}

/**
 * A producer's side of `AuditChainCheckpointV1`: told which records the broker acknowledged, it
 * appends a signed checkpoint over their digests every `every` records or `intervalMs` after the
 * first, and on `flush`/`close`. One signature per checkpoint: nothing is signed per record, and
 * a record's own append never waits for a checkpoint. Only acknowledged records are covered, so
 * a checkpoint never vouches for a record that is not on the log; one that could not be appended
 * gives its records back to the next.
 */
export class AuditCheckpointer {
  private readonly key: SigningKey | AgentKey;
  private readonly source: string;
  readonly producer: string;
  private readonly every: number;
  private readonly intervalMs: number;
  private readonly append: (checkpoint: AuditChainCheckpoint) => Promise<unknown>;
  private readonly onError: (error: unknown) => void;
  private pending: Covered[] = [];
  private writing: Promise<void> | undefined;
  private timer: NodeJS.Timeout | undefined;
  private closed = false;
  private written = 0;

  constructor(options: AuditCheckpointerOptions) {
    if (typeof options !== 'object' || options === null) throw new TypeError('auditCheckpointer options must be an object');
    for (const key of Object.keys(options)) if (!OPTION_KEYS.has(key)) throw new TypeError(`unknown auditCheckpointer option "${key}"`);
    const key = options.key as Partial<SigningKey> | undefined;
    if (typeof key !== 'object' || key === null || typeof key.keyId !== 'string' || typeof key.privateKey !== 'object') {
      throw new TypeError('auditCheckpointer key must be a signing key or an agent key');
    }
    if (typeof options.append !== 'function') throw new TypeError('auditCheckpointer append must be a function');
    if (typeof options.source !== 'string' || options.source.length === 0 || options.source.length > 256) throw new TypeError('auditCheckpointer source must be a string of 1 to 256 characters');
    this.key = options.key;
    this.source = options.source;
    this.producer = options.producer ?? `${options.source}#${randomUUID().slice(0, 8)}`;
    this.every = bounded(options.every ?? 100, 'every', 1, MAX_CHECKPOINT_DIGESTS);
    this.intervalMs = bounded(options.intervalMs ?? 1_000, 'intervalMs', 1, 3_600_000);
    this.append = options.append;
    this.onError = options.onError ?? (() => undefined);
  }

  /** Checkpoints appended so far. */
  get checkpoints(): number {
    return this.written;
  }

  /** Acknowledged records no appended checkpoint covers yet. */
  get uncovered(): number {
    return this.pending.length;
  }

  /** The broker acknowledged `record` (a record of this checkpointer's source): the next checkpoint covers it. */
  covered(record: { readonly chain?: { readonly seq: number } | undefined }, digest: string = eventDigest(record)): void {
    if (this.closed) return;
    this.pending.push(record.chain ? { digest, seq: record.chain.seq } : { digest });
    if (this.pending.length >= this.every) {
      this.background();
    } else if (!this.timer) {
      this.timer = setTimeout(() => {
        this.timer = undefined;
        this.background();
      }, this.intervalMs);
      // A pending checkpoint must not keep a process alive: `close` is the guarantee.
      this.timer.unref();
    }
  }

  /** Appends checkpoints over every acknowledged record not covered yet; rejects when one could not be appended. */
  async flush(): Promise<void> {
    while (this.writing) await this.writing.catch(() => undefined);
    if (this.timer) clearTimeout(this.timer);
    this.timer = undefined;
    while (this.pending.length > 0) {
      const step = this.writeOne();
      this.writing = step;
      try {
        await step;
      } finally {
        if (this.writing === step) this.writing = undefined;
      }
    }
  }

  /** Writes the last checkpoint and stops; records acknowledged afterwards are not covered. */
  async close(): Promise<void> {
    try {
      await this.flush();
    } finally {
      this.closed = true;
      if (this.timer) clearTimeout(this.timer);
      this.timer = undefined;
    }
  }

  private background(): void {
    this.flush().catch((error: unknown) => {
      this.onError(error);
      // Try again later: the records are still waiting.
      if (!this.closed && this.pending.length > 0 && !this.timer) {
        this.timer = setTimeout(() => {
          this.timer = undefined;
          this.background();
        }, this.intervalMs);
        this.timer.unref();
      }
    });
  }

  private async writeOne(): Promise<void> {
    const batch = this.pending.splice(0, MAX_CHECKPOINT_DIGESTS);
    const seqs = batch.flatMap((c) => (c.seq === undefined ? [] : [c.seq]));
    const checkpoint = auditCheckpoint(
      { source: this.source, producer: this.producer, digests: batch.map((c) => c.digest), ...(seqs.length > 0 && { lastSeq: Math.max(...seqs) }) },
      this.key,
    );
    try {
      await this.append(checkpoint);
      this.written += 1;
    } catch (error) {
      this.pending.unshift(...batch);
      throw error;
    }
  }
}
