interface Waiter {
  readonly offset: bigint;
  readonly resolve: () => void;
  readonly reject: (error: Error) => void;
  readonly timer: NodeJS.Timeout;
}

/**
 * Per partition, the next offset not yet applied, and the writers waiting for an offset to be
 * applied. A wait ends when the watermark passes the offset, at its deadline (with the error
 * `late` makes), or when the engine stops.
 */
export class OffsetWatermarks {
  private readonly next = new Map<number, bigint>();
  private readonly waiters = new Map<number, Set<Waiter>>();
  private closedWith: Error | undefined;

  /** `late` makes the error a wait fails with at its deadline. */
  constructor(private readonly late: () => Error = () => new Error('offset not applied by the deadline')) {}

  /** The next offset not yet applied on `partition` (0 when nothing was). */
  get(partition: number): bigint {
    return this.next.get(partition) ?? 0n;
  }

  /** A copy of every partition's watermark. */
  snapshot(): Map<number, bigint> {
    return new Map(this.next);
  }

  /** Moves `partition` forward to `nextOffset` (never back) and releases the writers it covers. */
  advance(partition: number, nextOffset: bigint): void {
    if (nextOffset <= this.get(partition) && this.next.has(partition)) return;
    this.next.set(partition, nextOffset);
    const waiting = this.waiters.get(partition);
    if (!waiting) return;
    for (const waiter of waiting) {
      if (waiter.offset < nextOffset) {
        waiting.delete(waiter);
        clearTimeout(waiter.timer);
        waiter.resolve();
      }
    }
  }

  /** Resolves once `offset` on `partition` is applied; rejects at `deadline` (epoch ms). */
  waitFor(partition: number, offset: bigint, deadline: number): Promise<void> {
    if (this.closedWith) return Promise.reject(this.closedWith);
    if (offset < this.get(partition)) return Promise.resolve();
    return new Promise<void>((resolve, reject) => {
      let waiting = this.waiters.get(partition);
      if (!waiting) {
        waiting = new Set();
        this.waiters.set(partition, waiting);
      }
      const set = waiting;
      const waiter: Waiter = {
        offset,
        resolve,
        reject,
        timer: setTimeout(() => {
          set.delete(waiter);
          reject(this.late());
        }, Math.max(0, deadline - Date.now())),
      };
      set.add(waiter);
    });
  }

  /** Number of writers waiting. */
  waiting(): number {
    let n = 0;
    for (const set of this.waiters.values()) n += set.size;
    return n;
  }

  /** Rejects every waiter and every later wait with `error` (the engine is stopping). */
  close(error: Error): void {
    this.closedWith = error;
    for (const set of this.waiters.values()) {
      for (const waiter of set) {
        clearTimeout(waiter.timer);
        waiter.reject(error);
      }
      set.clear();
    }
  }
}
