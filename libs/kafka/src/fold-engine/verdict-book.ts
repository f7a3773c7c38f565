type Entry<V> =
  | { readonly phase: 'awaited' }
  | { readonly phase: 'settled'; readonly verdict: V }
  | { readonly phase: 'abandoned' };

/**
 * The verdicts on the events this process appended, by event id, until their writer reads
 * them (a read deletes). Only expected ids are kept, and at most `capacity` of them: the
 * oldest entry goes first, so a writer that never comes back cannot grow the book.
 */
export class VerdictBook<V> {
  private readonly entries = new Map<string, Entry<V>>();
  private evictedCount = 0;

  constructor(private readonly capacity = 10_000) {}

  /** Announces an event about to be appended, so its verdict is kept when the fold applies it. */
  expect(eventId: string): void {
    this.entries.set(eventId, { phase: 'awaited' });
    while (this.entries.size > this.capacity) {
      const oldest = this.entries.keys().next();
      if (oldest.done) break;
      this.entries.delete(oldest.value);
      this.evictedCount += 1;
    }
  }

  /**
   * Records the fold's verdict on `eventId`. Returns `abandoned` when its writer gave up
   * waiting (the caller was told the ledger is unavailable), `unexpected` for events this
   * process did not append.
   */
  settle(eventId: string, verdict: V): 'kept' | 'abandoned' | 'unexpected' {
    const entry = this.entries.get(eventId);
    // A second record with the same id (re-published by someone else) never replaces the first verdict.
    if (!entry || entry.phase === 'settled') return 'unexpected';
    if (entry.phase === 'abandoned') {
      this.entries.delete(eventId);
      return 'abandoned';
    }
    this.entries.set(eventId, { phase: 'settled', verdict });
    return 'kept';
  }

  /** The verdict on the writer's own event, once; undefined when not (or no longer) known. */
  take(eventId: string): V | undefined {
    const entry = this.entries.get(eventId);
    if (entry?.phase !== 'settled') return undefined;
    this.entries.delete(eventId);
    return entry.verdict;
  }

  /**
   * The writer gives up. Returns the verdict when the fold had already applied the event (the
   * caller must undo what it won), otherwise remembers that a late verdict has no reader.
   */
  abandon(eventId: string): V | undefined {
    const entry = this.entries.get(eventId);
    if (entry?.phase === 'settled') {
      this.entries.delete(eventId);
      return entry.verdict;
    }
    if (entry) this.entries.set(eventId, { phase: 'abandoned' });
    return undefined;
  }

  size(): number {
    return this.entries.size;
  }

  /** Entries dropped because the book was full. */
  evicted(): number {
    return this.evictedCount;
  }
}
