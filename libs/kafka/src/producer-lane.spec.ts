import { describe, expect, it } from '@jest/globals';
import { type Producer } from 'kafkajs';
import { ProducerLane } from './producer-lane.js';

/** Producers that record their lifecycle; `connect` of the n-th fails when `failingConnects` holds n. */
function producers(failingConnects: ReadonlySet<number> = new Set()) {
  const made: { id: number; connected: boolean; disconnected: boolean }[] = [];
  const create = (): Producer => {
    const me = { id: made.length + 1, connected: false, disconnected: false };
    made.push(me);
    return {
      connect: async () => {
        if (failingConnects.has(me.id)) throw new Error('broker away');
        me.connected = true;
      },
      disconnect: async () => void (me.disconnected = true),
      id: me.id,
    } as unknown as Producer;
  };
  return { made, create };
}

const idOf = (p: Producer): number => (p as unknown as { id: number }).id;

describe('ProducerLane', () => {
  it('keeps one producer while its sends succeed', async () => {
    const { made, create } = producers();
    const lane = await ProducerLane.connect(create);
    expect(await lane.use(async (p) => idOf(p))).toBe(1);
    expect(await lane.use(async (p) => idOf(p))).toBe(1);
    expect(made).toHaveLength(1);
  });

  it('sends the call after a failed one on a fresh producer, and lets the old one go', async () => {
    const { made, create } = producers();
    const lane = await ProducerLane.connect(create);
    await expect(lane.use(async () => Promise.reject(new Error('answer lost')))).rejects.toThrow('answer lost');
    expect(await lane.use(async (p) => idOf(p))).toBe(2);
    expect(made.map((m) => [m.connected, m.disconnected])).toEqual([[true, true], [true, false]]);
  });

  it('runs calls one at a time, in order, and a call queued behind a failure gets the fresh producer', async () => {
    const { create } = producers();
    const lane = await ProducerLane.connect(create);
    const seen: string[] = [];
    let release: () => void = () => undefined;
    const first = lane.use(async (p) => {
      seen.push(`start ${idOf(p)}`);
      await new Promise<void>((r) => (release = r));
      seen.push('fail 1');
      throw new Error('answer lost');
    });
    const second = lane.use(async (p) => void seen.push(`start ${idOf(p)}`));
    await new Promise((r) => setImmediate(r));
    release();
    await expect(first).rejects.toThrow();
    await second;
    expect(seen).toEqual(['start 1', 'fail 1', 'start 2']);
  });

  it('stays stale when the fresh producer cannot connect, and renews on the call after', async () => {
    const { made, create } = producers(new Set([2]));
    const lane = await ProducerLane.connect(create);
    await expect(lane.use(async () => Promise.reject(new Error('answer lost')))).rejects.toThrow();
    await expect(lane.use(async (p) => idOf(p))).rejects.toThrow('broker away');
    expect(await lane.use(async (p) => idOf(p))).toBe(3);
    expect(made[1]?.disconnected).toBe(true);
  });

  it('lets the first producer go when it cannot connect (a refusal part-way leaves connections open)', async () => {
    const { made, create } = producers(new Set([1]));
    await expect(ProducerLane.connect(create)).rejects.toThrow('broker away');
    expect(made.map((m) => [m.connected, m.disconnected])).toEqual([[false, true]]);
  });

  it('refuses every call once closed', async () => {
    const { made, create } = producers();
    const lane = await ProducerLane.connect(create);
    await lane.close();
    expect(made[0]?.disconnected).toBe(true);
    await expect(lane.use(async (p) => idOf(p))).rejects.toMatchObject({ code: 'KAFKA.PRODUCER_CLOSED' });
    expect(made).toHaveLength(1);
  });

  it('leaves nothing connected when it is closed while a fresh producer is connecting', async () => {
    let connected: () => void = () => undefined;
    const made: { connected: boolean; disconnected: boolean }[] = [];
    const create = (): Producer => {
      const me = { connected: false, disconnected: false };
      made.push(me);
      return {
        connect: () =>
          made.length === 1
            ? Promise.resolve(void (me.connected = true))
            : new Promise<void>((resolve) => {
                connected = () => {
                  me.connected = true;
                  resolve();
                };
              }),
        disconnect: async () => void (me.disconnected = true),
      } as unknown as Producer;
    };
    const lane = await ProducerLane.connect(create);
    await expect(lane.use(async () => Promise.reject(new Error('answer lost')))).rejects.toThrow();
    const renewing = lane.use(async () => 'sent');
    await new Promise((r) => setImmediate(r));
    await lane.close();
    connected();
    await expect(renewing).rejects.toMatchObject({ code: 'KAFKA.PRODUCER_CLOSED' });
    // Every producer that connected was disconnected again: no socket keeps the process alive.
    expect(made.filter((m) => m.connected && !m.disconnected)).toEqual([]);
  });
});

