import { type ExportLine, type FeedFormat } from '../feeds/export-line.js';
import { type AuditSink, backoffMs, SinkUnavailableError } from './audit-sink.js';

export interface HttpSinkOptions {
  readonly url: string;
  readonly format: FeedFormat;
  /** Attempts per batch before `write` rejects (the pipeline then pauses and tries again). Default 5. */
  readonly maxAttempts?: number;
  readonly baseDelayMs?: number;
  readonly maxDelayMs?: number;
  /** Per request. Default 10 s. */
  readonly timeoutMs?: number;
  /** Lines per POST. Default 500. */
  readonly maxBatch?: number;
  /** Extra request headers (an authorization header from configuration). */
  readonly headers?: Readonly<Record<string, string>>;
}

const CONTENT_TYPE: Record<FeedFormat, string> = { ocsf: 'application/x-ndjson', cef: 'text/plain; charset=utf-8' };

/**
 * POSTs batches of lines (newline-delimited) to one endpoint; a 2xx acknowledges the batch.
 * Network errors, 408, 429 and 5xx are retried with exponential back-off and jitter, a bounded
 * number of times; other 4xx are retried too (a misconfigured endpoint must not lose events),
 * but reported with their status.
 */
export class HttpSink implements AuditSink {
  readonly name = 'http';
  readonly formats: readonly FeedFormat[];

  constructor(private readonly options: HttpSinkOptions) {
    this.formats = [options.format];
  }

  async write(lines: readonly ExportLine[]): Promise<void> {
    const max = this.options.maxBatch ?? 500;
    for (let i = 0; i < lines.length; i += max) await this.post(lines.slice(i, i + max));
  }

  private async post(lines: readonly ExportLine[]): Promise<void> {
    if (lines.length === 0) return;
    const body = lines.map((l) => `${l.text}\n`).join('');
    const attempts = this.options.maxAttempts ?? 5;
    let last = 'not attempted';
    for (let attempt = 1; attempt <= attempts; attempt += 1) {
      try {
        const response = await fetch(this.options.url, {
          method: 'POST',
          headers: { 'content-type': CONTENT_TYPE[this.options.format], 'x-gatehouse-first-event-id': lines[0]?.eventId ?? '', ...this.options.headers },
          body,
          signal: AbortSignal.timeout(this.options.timeoutMs ?? 10_000),
        });
        await response.arrayBuffer().catch(() => undefined);
        if (response.status >= 200 && response.status < 300) return;
        last = `status ${response.status}`;
      } catch {
        last = 'connection failed';
      }
      if (attempt < attempts) await new Promise((r) => setTimeout(r, backoffMs(attempt, this.options.baseDelayMs ?? 100, this.options.maxDelayMs ?? 5_000)));
    }
    throw new SinkUnavailableError(this.name, last);
  }

  async close(): Promise<void> {}
}
