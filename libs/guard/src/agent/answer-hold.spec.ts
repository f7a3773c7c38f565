import { describe, expect, it, jest } from '@jest/globals';
import { type ChunkType } from '@mastra/core/stream';
import { type PostModelOutcome } from '../guardrails/agent-guardrails.js';
import { holdAnswer, restoreTextEnds } from './answer-hold.js';

// The hold on synthetic chunk streams: the shapes a model and the processors in front of it can
// produce, including the ones a scripted agent never does.

type Chunk = { type: string; payload?: Record<string, unknown> };
const c = (type: string, payload?: Record<string, unknown>): ChunkType => ({ type, runId: 'run-1', from: 'AGENT', ...(payload ? { payload } : {}) }) as unknown as ChunkType;
const start = (id: string) => c('text-start', { id });
const delta = (id: string, text: string) => c('text-delta', { id, text });
const end = (id: string) => c('text-end', { id });

function streamOf(chunks: readonly ChunkType[], failWith?: Error): ReadableStream<ChunkType> {
  return new ReadableStream<ChunkType>({
    start(controller) {
      for (const chunk of chunks) controller.enqueue(chunk);
      if (failWith) controller.error(failWith);
      else controller.close();
    },
  });
}

async function read(stream: ReadableStream<ChunkType>): Promise<{ chunks: Chunk[]; error?: unknown }> {
  const chunks: Chunk[] = [];
  const reader = stream.getReader();
  try {
    for (let next = await reader.read(); !next.done; next = await reader.read()) chunks.push(next.value as unknown as Chunk);
  } catch (error) {
    return { chunks, error };
  }
  return { chunks };
}

const texts = (chunks: Chunk[]) => chunks.filter((x) => x.type === 'text-delta').map((x) => `${String(x.payload?.['id'])}:${String(x.payload?.['text'])}`);
const upper = async (text: string): Promise<PostModelOutcome> => ({ kind: 'pass', text: text.toUpperCase() });

describe('holdAnswer', () => {
  it('judges interleaved blocks each on its own, releasing each whole after its own end', async () => {
    const judged: string[] = [];
    const held = holdAnswer(streamOf([start('a'), start('b'), delta('a', 'one '), delta('b', 'two '), delta('a', 'three'), end('b'), delta('a', '!'), end('a')]), {
      judge: async (text) => (judged.push(text), upper(text)),
      stop: () => undefined,
      processorId: 'p',
    });
    const { chunks } = await read(held.stream);
    expect(judged).toEqual(['two ', 'one three!']);
    expect(texts(chunks)).toEqual(['b:TWO ', 'a:ONE THREE!']);
    expect(chunks.map((x) => x.type)).toEqual(['text-start', 'text-start', 'text-delta', 'text-end', 'text-delta', 'text-end']);
    expect(await held.ended).toEqual({ kind: 'finished', text: 'TWO ONE THREE!' });
  });

  it('judges a block whose end a processor replaced once restoreTextEnds closes it (at a tool call, the step end, the stream end)', async () => {
    const source = streamOf([start('a'), delta('a', 'checking'), c('tool-call', { toolCallId: 't1' }), start('b'), delta('b', 'done'), c('step-finish', { output: { text: 'checkingdone', usage: { total: 1 } }, messageId: 'm' }), start('c'), delta('c', 'tail')]);
    const held = holdAnswer(restoreTextEnds(source), { judge: upper, stop: () => undefined, processorId: 'p' });
    const { chunks } = await read(held.stream);
    expect(chunks.map((x) => x.type)).toEqual(['text-start', 'text-delta', 'text-end', 'tool-call', 'text-start', 'text-delta', 'text-end', 'step-finish', 'text-start', 'text-delta', 'text-end']);
    expect(await held.ended).toEqual({ kind: 'finished', text: 'CHECKINGDONETAIL' });
  });

  it('never shows a block that has no end of its own', async () => {
    const judge = jest.fn(upper);
    const held = holdAnswer(streamOf([start('a'), delta('a', 'jane@example.com')]), { judge, stop: () => undefined, processorId: 'p' });
    const { chunks } = await read(held.stream);
    expect(chunks.map((x) => x.type)).toEqual(['text-start']);
    expect(judge).not.toHaveBeenCalled();
    expect(await held.ended).toEqual({ kind: 'finished', text: '' });
  });

  it('drops what is held when the run stops (error, abort, tripwire): never judged, never shown', async () => {
    const judge = jest.fn(upper);
    const held = holdAnswer(streamOf([start('a'), delta('a', 'jane@example.com'), c('error', { error: 'model failed' })]), { judge, stop: () => undefined, processorId: 'p' });
    const { chunks } = await read(held.stream);
    expect(chunks.map((x) => x.type)).toEqual(['text-start', 'error']);
    expect(JSON.stringify(chunks)).not.toContain('jane');
    expect(judge).not.toHaveBeenCalled();
    expect(await held.ended).toEqual({ kind: 'finished', text: '' });
  });

  it('passes a failing source on as an error, and still settles', async () => {
    const held = holdAnswer(streamOf([start('a'), delta('a', 'partial')], new Error('socket closed')), { judge: upper, stop: () => undefined, processorId: 'p' });
    const { chunks, error } = await read(held.stream);
    expect((error as Error).message).toBe('socket closed');
    expect(texts(chunks)).toEqual([]);
    expect(await held.ended).toEqual({ kind: 'finished', text: '' });
  });

  it('refuses with a tripwire when the judge throws or a delta is not text, stops the run once, and reads no further', async () => {
    const stop = jest.fn<() => void>();
    const after = jest.fn<() => void>();
    const source = new ReadableStream<ChunkType>({
      start(controller) {
        for (const chunk of [start('a'), delta('a', 'x'), end('a')]) controller.enqueue(chunk);
      },
      cancel: after,
    });
    const held = holdAnswer(source, { judge: () => Promise.reject(new Error('jane@example.com')), stop, processorId: 'gatehouse-guardrails' });
    const { chunks } = await read(held.stream);
    expect(chunks.at(-1)).toMatchObject({ type: 'tripwire', payload: { reason: 'Guardrail evaluation failed', processorId: 'gatehouse-guardrails', metadata: { code: 'GUARDRAIL.FAULT' } } });
    expect(JSON.stringify(chunks)).not.toContain('jane');
    expect(stop).toHaveBeenCalledTimes(1);
    expect(after).toHaveBeenCalledTimes(1);
    expect(await held.ended).toMatchObject({ kind: 'refused', code: 'GUARDRAIL.FAULT' });

    const notText = holdAnswer(streamOf([start('a'), c('text-delta', { id: 'a', text: 42 })]), { judge: upper, stop: () => undefined, processorId: 'p' });
    expect((await read(notText.stream)).chunks.at(-1)).toMatchObject({ type: 'tripwire', payload: { metadata: { code: 'GUARDRAIL.FAULT', guardrail: 'stream-reader' } } });
  });

  it('ends with a halt as a tripwire naming the guardrail', async () => {
    const held = holdAnswer(streamOf([start('a'), delta('a', 'x'), end('a')]), { judge: async () => ({ kind: 'halted', reason: 'stopped by moderation', by: 'moderation' }), stop: () => undefined, processorId: 'p' });
    const { chunks } = await read(held.stream);
    expect(chunks.at(-1)).toMatchObject({ type: 'tripwire', payload: { reason: 'stopped by moderation', metadata: { code: 'GUARDRAIL.HALTED', guardrail: 'moderation' } } });
    expect(await held.ended).toEqual({ kind: 'halted', reason: 'stopped by moderation', by: 'moderation' });
  });

  it('settles when the reader cancels', async () => {
    const held = holdAnswer(streamOf([start('a'), delta('a', 'x'), end('a'), c('finish', {})]), { judge: upper, stop: () => undefined, processorId: 'p' });
    const reader = held.stream.getReader();
    const first = await reader.read();
    expect((first.value as unknown as Chunk).type).toBe('text-start');
    await reader.cancel();
    expect(await held.ended).toEqual({ kind: 'finished', text: '' });
  });
});

describe('restoreTextEnds', () => {
  it('closes a block whose end a processor replaced, before the next chunk that is not text, and at the stream end', async () => {
    const { chunks } = await read(restoreTextEnds(streamOf([start('a'), delta('a', 'x'), c('reasoning-delta', { id: 'r', text: 'r' }), delta('a', 'tail'), c('step-finish', {}), start('b'), delta('b', 'y')])));
    expect(chunks.map((x) => `${x.type}${x.type.startsWith('text') ? `:${String(x.payload?.['id'])}` : ''}`)).toEqual([
      'text-start:a', 'text-delta:a', 'reasoning-delta', 'text-delta:a', 'text-end:a', 'step-finish', 'text-start:b', 'text-delta:b', 'text-end:b',
    ]);
  });

  it('does not close a block the run cut short (error, abort, tripwire)', async () => {
    for (const stop of ['error', 'abort', 'tripwire']) {
      const { chunks } = await read(restoreTextEnds(streamOf([start('a'), delta('a', 'x'), c(stop, {}), c('finish', {})])));
      expect(chunks.map((x) => x.type)).toEqual(['text-start', 'text-delta', stop, 'finish']);
    }
  });

  it('leaves a stream whose blocks end on their own untouched', async () => {
    const chunks = [start('a'), delta('a', 'x'), end('a'), c('finish', {})];
    expect((await read(restoreTextEnds(streamOf(chunks)))).chunks).toEqual(chunks);
  });
});
