import { mkdir, open, readdir, stat, type FileHandle } from 'node:fs/promises';
import path from 'node:path';
import { type ExportLine, type FeedFormat } from '../feeds/export-line.js';
import { type AuditSink, SinkUnavailableError } from './audit-sink.js';

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
 * Appends lines to one file per feed format and source partition
 * (`ocsf-p0.000001.jsonl`, ...), so that a partition's records stay in log order in
 * their own files and a re-export of a range into an empty directory repeats the bytes.
 * Rotates by size; every batch is fsynced before `write` resolves.
 */
export class RotatingFileSink implements AuditSink {
  readonly name = 'file';
  readonly formats: readonly FeedFormat[];
  private readonly maxBytes: number;
  private readonly files = new Map<string, OpenFile>();
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
        for (const line of group) {
          const bytes = Buffer.from(`${line.text}\n`, 'utf8');
          let file = await this.current(stream, format);
          if (file.size > 0 && file.size + bytes.length > this.maxBytes) {
            await file.handle.sync();
            await file.handle.close();
            touched.delete(file);
            file = await this.openAt(stream, format, file.index + 1);
          }
          await file.handle.write(bytes);
          file.size += bytes.length;
          touched.add(file);
        }
      }
      for (const file of touched) await file.handle.sync();
    } catch (error) {
      throw new SinkUnavailableError(this.name, 'file write failed', error);
    }
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
    return this.openAt(stream, format, Number.isInteger(index) && index > 0 ? index : 1);
  }

  private async openAt(stream: string, format: FeedFormat, index: number): Promise<OpenFile> {
    const name = this.fileName(stream, format, index);
    const handle = await open(name, 'a');
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
