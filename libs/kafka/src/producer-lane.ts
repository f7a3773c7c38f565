import { GatehouseError } from '@gatehouse/contracts';
import { type Producer } from 'kafkajs';

function closedError(): GatehouseError {
  return new GatehouseError('KAFKA.PRODUCER_CLOSED', 'the producer is closed', { category: 'internal' });
}

/**
 * One kafkajs idempotent (or transactional) producer, used one send at a time, and replaced by a
 * fresh one after any failed send.
 *
 * Why: when a send fails, kafkajs hands its sequence numbers back, yet the broker may have appended
 * the batch (the request arrived, its answer did not: a broker stopping, a dropped connection, a
 * request timeout). The next batch to that partition then carries the same sequence numbers, and
 * the broker answers it as a retry of the first: acknowledged with the first one's offsets, never
 * appended (a transaction commits the aborted batch in its place). A fresh producer gets a new
 * producer id, or a new epoch of its transactional id, from the broker, and its numbers start
 * afresh. Sends go one at a time so that none can take numbers between a failure and the renewal.
 * kafkajs already sends one request at a time per broker (`maxInFlightRequests: 1`).
 */
export class ProducerLane {
  private tail: Promise<unknown> = Promise.resolve();
  private stale = false;
  private closed = false;

  private constructor(
    private readonly create: () => Producer,
    private current: Producer,
  ) {}

  /** Connects the first producer from `create` (which must build a new one at every call). */
  static async connect(create: () => Producer): Promise<ProducerLane> {
    const producer = create();
    try {
      await producer.connect();
    } catch (error) {
      // A connect refused part-way (no rights yet, a broker away) leaves its connections open.
      await producer.disconnect().catch(() => undefined);
      throw error;
    }
    return new ProducerLane(create, producer);
  }

  /**
   * Runs `send` with the producer after every earlier one settled. Whatever `send` throws marks
   * the producer stale (it cannot tell a failure before the broker from one after it), so the next
   * call starts by connecting a fresh one; a failed connect leaves it stale for the call after.
   */
  use<R>(send: (producer: Producer) => Promise<R>): Promise<R> {
    const run = this.tail.then(async () => {
      if (this.closed) throw closedError();
      if (this.stale) await this.renew();
      try {
        return await send(this.current);
      } catch (error) {
        this.stale = true;
        throw error;
      }
    });
    this.tail = run.catch(() => undefined);
    return run;
  }

  /** Disconnects at once (a send in flight fails); later calls reject with KAFKA.PRODUCER_CLOSED. */
  async close(): Promise<void> {
    this.closed = true;
    await this.current.disconnect();
  }

  private async renew(): Promise<void> {
    const fresh = this.create();
    try {
      await fresh.connect();
    } catch (error) {
      await fresh.disconnect().catch(() => undefined);
      throw error;
    }
    // Closed while it connected: nothing may be left connected (an open socket keeps a process alive).
    if (this.closed) {
      await fresh.disconnect().catch(() => undefined);
      throw closedError();
    }
    const old = this.current;
    this.current = fresh;
    this.stale = false;
    await old.disconnect().catch(() => undefined);
  }
}
