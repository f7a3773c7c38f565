// The caller's two streams of a guarded stream(), fed by its one reader (stream-stages.ts).
import { type ChunkType } from '@mastra/core/stream';
import { type StageSink } from './stream-stages.js';

/**
 * The caller's chunk and text streams, fed by the pump. The pump runs ahead of a slow reader, so
 * what it is ahead by waits in a queue of our own (taken from by index: a web stream's internal
 * queue shifts an array per chunk, which costs quadratic time once the reader falls far behind).
 * A stream the caller cancels is fed no more.
 */
export function callerStreams(failed: () => Error): { fullStream: ReadableStream<ChunkType>; textStream: ReadableStream<string>; sink: StageSink } {
  const full = new PumpedStream<ChunkType>();
  const text = new PumpedStream<string>();
  const sink: StageSink = {
    chunk(chunk) {
      full.push(chunk);
      if (chunk.type === 'text-delta') {
        const delta = (chunk.payload as { text?: unknown }).text;
        if (typeof delta === 'string' && delta.length > 0) text.push(delta);
      }
    },
    close() {
      full.end();
      text.end();
    },
    // The run failed: the caller's streams fail with `failed()`, never with the provider's or a tool's error.
    error() {
      const error = failed();
      full.end(error);
      text.end(error);
    },
  };
  return { fullStream: full.stream, textStream: text.stream, sink };
}

class PumpedStream<T> {
  readonly stream: ReadableStream<T>;
  private items: T[] = [];
  private head = 0;
  private ended: { error?: unknown } | undefined;
  private cancelled = false;
  private wake: (() => void) | undefined;

  constructor() {
    this.stream = new ReadableStream<T>(
      {
        pull: async (controller) => {
          while (this.head === this.items.length && !this.ended) await new Promise<void>((resolve) => (this.wake = resolve));
          if (this.head < this.items.length) this.give(controller);
          else this.finish(controller);
        },
        cancel: () => {
          this.cancelled = true;
          this.items = [];
          this.head = 0;
        },
      },
      { highWaterMark: 0 },
    );
  }

  // Hands over the next item (one per pull: the stream's own queue stays short).
  private give(controller: ReadableStreamDefaultController<T>): void {
    controller.enqueue(this.items[this.head]!);
    this.items[this.head++] = undefined as T;
    if (this.head > 1024 && this.head * 2 > this.items.length) {
      this.items = this.items.slice(this.head);
      this.head = 0;
    }
  }

  private finish(controller: ReadableStreamDefaultController<T>): void {
    if (this.ended?.error !== undefined) controller.error(this.ended.error);
    else controller.close();
  }

  push(item: T): void {
    if (this.cancelled || this.ended) return;
    this.items.push(item);
    this.wakeReader();
  }

  end(error?: unknown): void {
    if (this.ended) return;
    this.ended = error === undefined ? {} : { error };
    this.wakeReader();
  }

  private wakeReader(): void {
    const wake = this.wake;
    this.wake = undefined;
    wake?.();
  }
}
