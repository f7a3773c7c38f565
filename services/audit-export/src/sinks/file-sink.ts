import { mkdir, open, readdir, stat, type FileHandle } from 'node:fs/promises';
import path from 'node:path';
import { type ExportLine, type FeedFormat } from '../feeds/export-line.js';
import { type AuditSink, lineDigest as digest, SinkUnavailableError } from './audit-sink.js';

export interface FileSinkOptions {
  readonly directory: string;
  readonly formats: readonly FeedFormat[];
  /** Rotate when a file would grow past this many bytes. Default 64 MiB. */
  readonly maxBytes?: number;
}

interface OpenFile {
  readonly handle: FileHandle;
  readonly index: number;
  size: number;
}

const EXTENSION: Record<FeedFormat, string> = { ocsf: 'jsonl', cef: 'cef' };

/**
 * How far back, per stream, a restarted sink looks for lines it already wrote. What it can find
 * there is the batch that was in flight when the process stopped (written, not yet acknowledged):
 * one fetch of one partition, at most 1 MiB of records by kafkajs' default, which its feed lines
 * fit in many times over.
 */
export const RECOVERY_WINDOW_BYTES = 16 * 1024 * 1024;

/**
 * Appends lines to one file per feed format and source partition
 * (`ocsf-p0.000001.jsonl`, ...), so that a partition's records stay in log order in
 * their own files and a re-export of a range into an empty directory repeats the bytes.
 * Rotates by size; every batch is fsynced before `write` resolves.
 *
 * Restarts hold each record once. The pipeline stores a position only after every sink took the
 * batch, so a process that stops between the two exports that batch again. A line's text is a
 * pure function of its record, so the sink, on its first write to a stream after starting, reads
 * the stream's last `RECOVERY_WINDOW_BYTES`, cuts a line the crash left half-written, and skips
 * every line whose exact text is already there — until the first line that is not, after which
 * (log order) none can be. A record of another cluster at the same offset differs in event id,
 * hence in text, and is written.
 */
export class RotatingFileSink implements AuditSink {
  readonly name = 'file';
  readonly formats: readonly FeedFormat[];
  private readonly maxBytes: number;
  private readonly files = new Map<string, OpenFile>();
  /** Per stream, digests of the lines found at the end of its files on start; gone once a new line is written. */
  private readonly recovered = new Map<string, Set<string>>();
  private skipped = 0;
  private ready: Promise<void> | undefined;

  constructor(private readonly options: FileSinkOptions) {
    this.formats = options.formats;
    this.maxBytes = options.maxBytes ?? 64 * 1024 * 1024;
  }

  async write(lines: readonly ExportLine[]): Promise<void> {
    try {
      this.ready ??= mkdir(this.options.directory, { recursive: true }).then(() => undefined);
      await this.ready;
      const groups = new Map<string, ExportLine[]>();
      for (const line of lines) {
        const stream = `${line.format}-p${line.partition}`;
        const group = groups.get(stream) ?? [];
        group.push(line);
        groups.set(stream, group);
      }
      const touched = new Set<OpenFile>();
      for (const [stream, group] of groups) {
        const format = group[0]?.format ?? 'ocsf';
        let file = await this.current(stream, format);
        // A file's lines go in one write, not one each: a write per line cost a thread-pool
        // round trip per record, most of an export's time (issue 22). Order and rotation are as before.
        let pending: Buffer[] = [];
        const writePending = async () => {
          if (pending.length === 0) return;
          await file.handle.write(pending.length === 1 ? (pending[0] as Buffer) : Buffer.concat(pending));
          pending = [];
          touched.add(file);
        };
        for (const line of group) {
          const seen = this.recovered.get(stream);
          if (seen !== undefined) {
            if (seen.has(digest(line.text))) {
              this.skipped += 1;
              continue;
            }
            this.recovered.delete(stream);
          }
          const bytes = Buffer.from(`${line.text}\n`, 'utf8');
          if (file.size > 0 && file.size + bytes.length > this.maxBytes) {
            await writePending();
            await file.handle.sync();
            await file.handle.close();
            touched.delete(file);
            file = await this.openAt(stream, format, file.index + 1);
          }
          pending.push(bytes);
          file.size += bytes.length;
        }
        await writePending();
      }
      for (const file of touched) await file.handle.sync();
    } catch (error) {
      throw new SinkUnavailableError(this.name, 'file write failed', error);
    }
  }

  /** Closes the partition's streams: the next write opens the newest file again and recovers from its end. */
  async reclaim(partition: number): Promise<void> {
    for (const [stream, file] of [...this.files]) {
      if (!stream.endsWith(`-p${partition}`)) continue;
      this.files.delete(stream);
      this.recovered.delete(stream);
      await file.handle.close().catch(() => undefined);
    }
  }

  /** Lines not written again after a restart because the files already held them. */
  get skippedOnRecovery(): number {
    return this.skipped;
  }

  /** The directory's files of one stream, oldest first (for tests and operators). */
  async filesOf(format: FeedFormat, partition: number): Promise<string[]> {
    const prefix = `${format}-p${partition}.`;
    const names = await readdir(this.options.directory).catch(() => [] as string[]);
    return names.filter((n) => n.startsWith(prefix)).sort().map((n) => path.join(this.options.directory, n));
  }

  private fileName(stream: string, format: FeedFormat, index: number): string {
    return path.join(this.options.directory, `${stream}.${String(index).padStart(6, '0')}.${EXTENSION[format]}`);
  }

  private async current(stream: string, format: FeedFormat): Promise<OpenFile> {
    const open_ = this.files.get(stream);
    if (open_) return open_;
    // Continue the newest existing file of the stream after a restart.
    const names = (await readdir(this.options.directory)).filter((n) => n.startsWith(`${stream}.`)).sort();
    const last = names.at(-1);
    const index = last ? Number(last.split('.')[1]) : 1;
    const file = await this.openAt(stream, format, Number.isInteger(index) && index > 0 ? index : 1);
    if (names.length > 0) await this.recover(stream, file, names.slice(0, -1).map((n) => path.join(this.options.directory, n)));
    return file;
  }

  /**
   * Reads the end of a stream's files (the newest, open as `file`, then older ones while the
   * window lasts): cuts a last line without its newline (a write the crash interrupted) and
   * remembers the digests of the whole lines.
   */
  private async recover(stream: string, file: OpenFile, older: readonly string[]): Promise<void> {
    const seen = new Set<string>();
    let budget = RECOVERY_WINDOW_BYTES;
    const take = async (handle: FileHandle, size: number, newest: boolean): Promise<boolean> => {
      const length = Math.min(size, budget);
      const buffer = Buffer.alloc(length);
      if (length > 0) await handle.read(buffer, 0, length, size - length);
      budget -= length;
      const end = buffer.lastIndexOf(0x0a);
      if (newest && end + 1 < length) {
        // Bytes after the last newline are a line cut short: drop them before appending.
        await handle.truncate(size - length + end + 1);
        file.size = size - length + end + 1;
      }
      const lines = buffer.subarray(0, end + 1).toString('utf8').split('\n');
      lines.pop();
      // A window that starts inside the file may start inside a line: that one is not whole.
      if (length < size) lines.shift();
      for (const line of lines) seen.add(digest(line));
      return budget > 0 && length === size;
    };
    let more = await take(file.handle, file.size, true);
    for (const name of [...older].reverse()) {
      if (!more) break;
      const handle = await open(name, 'r');
      try {
        more = await take(handle, (await handle.stat()).size, false);
      } finally {
        await handle.close();
      }
    }
    if (seen.size > 0) this.recovered.set(stream, seen);
  }

  private async openAt(stream: string, format: FeedFormat, index: number): Promise<OpenFile> {
    const name = this.fileName(stream, format, index);
    // Read as well as append: a restarted sink reads the end of the newest file (see recover).
    const handle = await open(name, 'a+');
    const size = (await stat(name)).size;
    const file = { handle, index, size };
    this.files.set(stream, file);
    return file;
  }

  async close(): Promise<void> {
    const files = [...this.files.values()];
    this.files.clear();
    for (const file of files) {
      await file.handle.sync().catch(() => undefined);
      await file.handle.close().catch(() => undefined);
    }
  }
}
