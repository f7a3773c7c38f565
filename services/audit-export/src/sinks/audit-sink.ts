import { createHash } from 'node:crypto';
import { GatehouseError } from '@gatehouse/contracts';
import { type ExportLine, type FeedFormat } from '../feeds/export-line.js';

/**
 * Where feed lines go. `write` resolves only once the destination has durably taken every
 * line (fsync, 2xx, acks=all); it rejects when it could not, and the caller retries the
 * whole batch. A sink may therefore see a line twice; consumers de-duplicate by event id.
 */
export interface AuditSink {
  /** Short name for logs and metric labels, e.g. `file`, `http`, `kafka`. */
  readonly name: string;
  /** The feed formats this sink takes; the pipeline hands it only lines of these formats. */
  readonly formats: readonly FeedFormat[];
  write(lines: readonly ExportLine[]): Promise<void>;
  /**
   * This replica (scaled out) takes source partition `partition` (again): another replica may have
   * written its lines since, so what the sink knew of the partition's stream is stale and it looks
   * at the stream's end again before its next write there. Absent: the sink keeps no such state.
   */
  reclaim?(partition: number): Promise<void>;
  close(): Promise<void>;
}

/**
 * The identity of a line a sink finds already written: a line's text is a pure function of its
 * record (and carries the event id), so equal digests are the same record in the same format.
 */
export const lineDigest = (text: string): string => createHash('sha256').update(text).digest('base64');

/** A sink did not acknowledge a batch; always retryable. */
export class SinkUnavailableError extends GatehouseError {
  constructor(sink: string, reason: string, cause?: unknown) {
    super('AUDIT.SINK_UNAVAILABLE', `sink ${sink} did not acknowledge: ${reason}`, {
      category: 'unavailable',
      retryable: true,
      details: { sink, reason },
      ...(cause === undefined ? {} : { cause }),
    });
    this.name = 'SinkUnavailableError';
  }
}

/** Exponential back-off with full jitter: uniform in [0, min(max, base·2^attempt)). */
export function backoffMs(attempt: number, baseMs: number, maxMs: number, random: () => number = Math.random): number {
  const ceiling = Math.min(maxMs, baseMs * 2 ** Math.max(0, attempt - 1));
  return Math.floor(ceiling / 2 + (random() * ceiling) / 2);
}
