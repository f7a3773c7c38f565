import { describe, expect, it } from '@jest/globals';
import { OffsetWatermarks } from './offset-watermarks.js';
import { VerdictBook } from './verdict-book.js';

type Verdict = { readonly kind: 'accepted' } | { readonly kind: 'rejected'; readonly reason: string };

describe('OffsetWatermarks', () => {
  it('releases a writer once its offset is applied, and at once when it already was', async () => {
    const marks = new OffsetWatermarks();
    const deadline = Date.now() + 1_000;
    let released = false;
    const waiting = marks.waitFor(1, 5n, deadline).then(() => (released = true));
    marks.advance(1, 5n);
    await Promise.resolve();
    expect(released).toBe(false);
    marks.advance(1, 6n);
    await waiting;
    expect(released).toBe(true);
    await expect(marks.waitFor(1, 3n, deadline)).resolves.toBeUndefined();
    expect(marks.waiting()).toBe(0);
  });

  it('never moves back, and keeps partitions apart', async () => {
    const marks = new OffsetWatermarks();
    marks.advance(0, 10n);
    marks.advance(0, 4n);
    expect(marks.get(0)).toBe(10n);
    expect(marks.get(2)).toBe(0n);
  });

  it('fails a wait at its deadline with the error it was given, and every wait on close', async () => {
    const marks = new OffsetWatermarks(() => new RangeError('too late'));
    await expect(marks.waitFor(0, 0n, Date.now() + 20)).rejects.toThrow(RangeError);
    const pending = marks.waitFor(0, 0n, Date.now() + 60_000);
    marks.close(new Error('stopping'));
    await expect(pending).rejects.toThrow('stopping');
    await expect(marks.waitFor(0, 0n, Date.now() + 60_000)).rejects.toThrow('stopping');
    expect(marks.waiting()).toBe(0);
  });
});

describe('VerdictBook', () => {
  const accepted = { kind: 'accepted' } as const;

  it('keeps the verdict of an expected event until its writer reads it, once', () => {
    const book = new VerdictBook<Verdict>();
    book.expect('e1');
    expect(book.settle('e1', accepted)).toBe('kept');
    expect(book.take('e1')).toEqual(accepted);
    expect(book.take('e1')).toBeUndefined();
    expect(book.size()).toBe(0);
  });

  it('ignores events it did not expect, and a second record with the same id', () => {
    const book = new VerdictBook<Verdict>();
    expect(book.settle('foreign', accepted)).toBe('unexpected');
    book.expect('e1');
    book.settle('e1', accepted);
    expect(book.settle('e1', { kind: 'rejected', reason: 'key-held' })).toBe('unexpected');
    expect(book.take('e1')).toEqual(accepted);
  });

  it('reports a verdict that arrives after its writer gave up, and hands back one that arrived before', () => {
    const book = new VerdictBook<Verdict>();
    book.expect('late');
    expect(book.abandon('late')).toBeUndefined();
    expect(book.settle('late', accepted)).toBe('abandoned');
    book.expect('early');
    book.settle('early', accepted);
    expect(book.abandon('early')).toEqual(accepted);
    expect(book.size()).toBe(0);
  });

  it('stays bounded, dropping the oldest entries first', () => {
    const book = new VerdictBook<Verdict>(3);
    for (const id of ['a', 'b', 'c', 'd', 'e']) book.expect(id);
    expect(book.size()).toBe(3);
    expect(book.evicted()).toBe(2);
    expect(book.settle('a', accepted)).toBe('unexpected');
    expect(book.settle('e', accepted)).toBe('kept');
  });
});
