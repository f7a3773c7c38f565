// The guarded stream is one reader of the run's chunks and a few stages it passes each chunk
// through (closing text blocks, holding answers until judged, the caller's view), not a chain of
// web streams: every TransformStream or tee between Mastra and the caller costs a handful of
// promises per chunk, which a 10,000-chunk answer feels. A stage is a plain stateful function.
import { type ChunkType } from '@mastra/core/stream';

/** Chunks after which the run produces nothing more (a block still open was cut short). */
export const RUN_STOPS: ReadonlySet<string> = new Set(['error', 'abort', 'tripwire']);

/** One stage: what one chunk becomes (zero or more chunks), and what the end of the source adds. */
export interface StreamStage {
  push(chunk: ChunkType): ChunkType[] | Promise<ChunkType[]>;
  end(): ChunkType[] | Promise<ChunkType[]>;
  /** True once the stage has passed on its last chunk: nothing after it is read. */
  readonly done?: boolean;
  /** The source failed or the reader cancelled: drop what is held. */
  abandon?(): void;
}

function abandon(stages: readonly StreamStage[]): void {
  for (const stage of stages) stage.abandon?.();
}

/**
 * Passes `chunks` through `stages` from `from` on; returns what comes out of the last. Synchronous
 * while every stage answers synchronously (most chunks, with synchronous policies): a promise per
 * stage per chunk is what a long stream would otherwise pay.
 */
function through(stages: readonly StreamStage[], chunks: ChunkType[], from: number): ChunkType[] | Promise<ChunkType[]> {
  let batch = chunks;
  for (let i = from; i < stages.length && batch.length > 0; i++) {
    const out = pushAll(stages[i]!, batch, 0, []);
    if (out instanceof Promise) return out.then((next) => through(stages, next, i + 1));
    batch = out;
  }
  return batch;
}

// One stage over a batch, in order, from `index` on; what comes out is appended to `out`.
function pushAll(stage: StreamStage, batch: ChunkType[], index: number, out: ChunkType[]): ChunkType[] | Promise<ChunkType[]> {
  if (index === 0 && batch.length === 1) return stage.done ? [] : stage.push(batch[0]!);
  for (let j = index; j < batch.length; j++) {
    if (stage.done) break;
    const pushed = stage.push(batch[j]!);
    if (pushed instanceof Promise) {
      return pushed.then((chunks) => {
        for (const c of chunks) out.push(c);
        return pushAll(stage, batch, j + 1, out);
      });
    }
    for (const c of pushed) out.push(c);
  }
  return out;
}

/** What the end of the source adds, stage by stage (each stage's tail passes through the later ones). */
async function flush(stages: readonly StreamStage[]): Promise<ChunkType[]> {
  const out: ChunkType[] = [];
  for (let i = 0; i < stages.length; i++) {
    if (stages[i]!.done) continue;
    const tail = await through(stages, await stages[i]!.end(), i + 1);
    for (const c of tail) out.push(c);
  }
  return out;
}

/** Where the pump puts what comes out of the last stage. */
export interface StageSink {
  chunk(chunk: ChunkType): void;
  close(): void;
  error(error: unknown): void;
}

/**
 * Reads `source` to its end (or until the last stage is done) as fast as it comes, whether or
 * not anyone reads the sink: the run's judgements do not wait on the caller's pace. Resolves
 * when it has stopped; never rejects (a source failure goes to the sink).
 */
export async function pumpStages(source: ReadableStream<ChunkType>, stages: readonly StreamStage[], sink: StageSink): Promise<void> {
  const reader = source.getReader();
  const last = stages[stages.length - 1];
  try {
    for (;;) {
      const next = await reader.read();
      if (next.done) {
        for (const chunk of await flush(stages)) sink.chunk(chunk);
        sink.close();
        return;
      }
      // Awaited only when a stage answered with a promise: an await per chunk is what this avoids.
      const passed = through(stages, [next.value], 0);
      for (const chunk of passed instanceof Promise ? await passed : passed) sink.chunk(chunk);
      if (last?.done) {
        // Stopped before the source ended: the stages before the last settle with what they released.
        abandon(stages);
        sink.close();
        void reader.cancel().catch(() => undefined);
        return;
      }
    }
  } catch (error) {
    abandon(stages);
    sink.error(error);
    void reader.cancel().catch(() => undefined);
  }
}

/** `source` through `stages` as a stream read at the reader's pace (for a stage used on its own). */
export function pipeStages(source: ReadableStream<ChunkType>, stages: readonly StreamStage[]): ReadableStream<ChunkType> {
  const reader = source.getReader();
  const last = stages[stages.length - 1];
  let finished = false;
  return new ReadableStream<ChunkType>({
    async pull(controller) {
      while (!finished) {
        let next: Awaited<ReturnType<typeof reader.read>>;
        try {
          next = await reader.read();
        } catch (error) {
          finished = true;
          abandon(stages);
          controller.error(error);
          return;
        }
        const passed = next.done ? flush(stages) : through(stages, [next.value], 0);
        const out = passed instanceof Promise ? await passed : passed;
        for (const chunk of out) controller.enqueue(chunk);
        if (next.done || last?.done) {
          finished = true;
          if (!next.done) abandon(stages);
          controller.close();
          if (!next.done) void reader.cancel().catch(() => undefined);
          return;
        }
        if (out.length > 0) return;
      }
    },
    cancel(reason) {
      finished = true;
      abandon(stages);
      return reader.cancel(reason);
    },
  });
}
