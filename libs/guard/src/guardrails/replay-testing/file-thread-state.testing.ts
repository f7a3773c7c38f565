// A durable Mastra `threadState` domain for the crash test: one file per (thread, type), written to a
// temporary file, flushed to disk and renamed into place, so a value set before a SIGKILL is there
// for the next process and a torn write is never read. It stands in for a durable Mastra adapter
// (@mastra/libsql, @mastra/pg), none of which is installed in this workspace.
import { createHash } from 'node:crypto';
import { closeSync, fsyncSync, mkdirSync, openSync, readFileSync, renameSync, rmSync, writeSync } from 'node:fs';
import path from 'node:path';
import { ThreadStateStorage } from '@mastra/core/storage';

export class FileThreadState extends ThreadStateStorage {
  constructor(private readonly dir: string) {
    super();
  }

  private file(threadId: string, type: string): string {
    return path.join(this.dir, `${createHash('sha256').update(`${threadId}\0${type}`).digest('hex')}.json`);
  }

  async init(): Promise<void> {
    mkdirSync(this.dir, { recursive: true });
  }

  async getState<T = unknown>({ threadId, type }: { threadId: string; type: string }): Promise<T | undefined> {
    try {
      return JSON.parse(readFileSync(this.file(threadId, type), 'utf8')) as T;
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
      throw error;
    }
  }

  async setState<T = unknown>({ threadId, type, value }: { threadId: string; type: string; value: T }): Promise<void> {
    mkdirSync(this.dir, { recursive: true });
    const target = this.file(threadId, type);
    const temporary = `${target}.${process.pid}.tmp`;
    const fd = openSync(temporary, 'w');
    try {
      writeSync(fd, JSON.stringify(value));
      fsyncSync(fd);
    } finally {
      closeSync(fd);
    }
    renameSync(temporary, target);
    const directory = openSync(this.dir, 'r');
    try {
      fsyncSync(directory);
    } finally {
      closeSync(directory);
    }
  }

  async deleteState({ threadId, type }: { threadId: string; type: string }): Promise<void> {
    rmSync(this.file(threadId, type), { force: true });
  }

  async dangerouslyClearAll(): Promise<void> {
    rmSync(this.dir, { recursive: true, force: true });
  }
}
