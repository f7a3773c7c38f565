import net from 'node:net';
import { type ISocketFactory } from 'kafkajs';

/** Kafka's request key of Produce. */
const PRODUCE = 0;

/**
 * A kafkajs socket factory that can lose the broker's answer to a Produce request: the request
 * reaches the broker, which appends the batch and answers, and the connection closes before the
 * client reads the answer. What a broker stopping, a dropped connection or a request timeout does
 * to a producer, made exact: the batch is on the log and its sender was told it failed.
 */
export class LostAnswers {
  private armed = 0;
  private lostCount = 0;
  private produced = 0;

  /** Build the client with this (`new Kafka({ socketFactory })`). */
  readonly socketFactory: ISocketFactory = ({ host, port, onConnect }) => {
    const socket = net.connect({ host, port }, onConnect);
    const losing = new Set<number>();
    const write = socket.write.bind(socket) as (chunk: unknown, ...rest: unknown[]) => boolean;
    // kafkajs writes each request whole, in one call: size, api key, api version, correlation id.
    socket.write = ((chunk: unknown, ...rest: unknown[]) => {
      const produce = Buffer.isBuffer(chunk) && chunk.length >= 12 && chunk.readInt16BE(4) === PRODUCE;
      if (produce) this.produced += 1;
      if (produce && this.armed > 0) {
        this.armed -= 1;
        losing.add((chunk as Buffer).readInt32BE(8));
      }
      return write(chunk, ...rest);
    }) as typeof socket.write;
    const frames = answerFrames();
    const emit = socket.emit.bind(socket) as (event: string | symbol, ...args: unknown[]) => boolean;
    socket.emit = ((event: string | symbol, ...args: unknown[]) => {
      if (event === 'data' && losing.size > 0 && Buffer.isBuffer(args[0]) && frames(args[0]).some((id) => losing.has(id))) {
        this.lostCount += 1;
        // With an error: kafkajs fails a connection's requests on 'error' or 'end', not on 'close'.
        socket.destroy(new Error('the answer was lost on purpose'));
        return true;
      }
      return emit(event, ...args);
    }) as typeof socket.emit;
    return socket;
  };

  /** The answer to the next `count` Produce requests (on any connection of the client) is lost. */
  loseNextProduceAnswers(count = 1): void {
    this.armed += count;
  }

  /** Produce requests sent so far (on every connection of the client). */
  get produceRequests(): number {
    return this.produced;
  }

  /** Answers lost so far. */
  get lost(): number {
    return this.lostCount;
  }
}

/**
 * Follows the answer frames of one connection across data chunks (a frame may span chunks, a chunk
 * may hold several): returns the correlation ids of the frames whose header the chunk completes.
 */
function answerFrames(): (chunk: Buffer) => number[] {
  let skip = 0;
  let head = Buffer.alloc(0);
  return (chunk) => {
    const ids: number[] = [];
    let at = 0;
    while (at < chunk.length) {
      if (skip > 0) {
        const n = Math.min(skip, chunk.length - at);
        skip -= n;
        at += n;
        continue;
      }
      const take = Math.min(8 - head.length, chunk.length - at);
      head = Buffer.concat([head, chunk.subarray(at, at + take)]);
      at += take;
      if (head.length < 8) break;
      // size (of what follows it), then the correlation id: the rest of the frame is skipped.
      ids.push(head.readInt32BE(4));
      skip = head.readInt32BE(0) - 4;
      head = Buffer.alloc(0);
    }
    return ids;
  };
}
