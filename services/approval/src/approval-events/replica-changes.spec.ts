import { describe, expect, it } from '@jest/globals';
import { EventEmitter } from 'node:events';
import { type DataSource } from 'typeorm';
import { type ApprovalChange } from '../engine/approval-engine.js';
import { changeChannel, ReplicaChanges } from './replica-changes.js';

// The fan-out of changes between replicas, over a stand-in for the pool's listening connection:
// what it relays, what it drops, and that it listens again after losing the connection.

class FakeClient extends EventEmitter {
  readonly queries: string[] = [];
  async query(sql: string): Promise<unknown> {
    this.queries.push(sql);
    return [];
  }
}

const change: ApprovalChange = { approvalId: `appr_${'a'.repeat(64)}`, type: 'ApprovalDecided', status: 'denied', tenant: 'acme', connectorId: 'payments.refund', at: '2026-12-07T10:00:00.000Z' };

async function started() {
  const clients: FakeClient[] = [];
  const released: unknown[] = [];
  const notified: unknown[][] = [];
  const relayed: ApprovalChange[] = [];
  const logged: string[] = [];
  const dataSource = {
    driver: {
      obtainMasterConnection: async () => {
        const client = new FakeClient();
        // The pool keeps an error listener of its own on every client.
        client.on('error', () => undefined);
        clients.push(client);
        return [client, (error?: unknown) => released.push(error ?? 'released')];
      },
    },
    query: async (_sql: string, params: unknown[]) => void notified.push(params),
  } as unknown as DataSource;
  const changes = await ReplicaChanges.start({ dataSource, schema: 'approval', replicaId: 'replica-a', relay: (c) => relayed.push(c), log: (_level, _message, fields) => logged.push(String(fields['code'])) });
  return { changes, clients, released, notified, relayed, logged };
}

const notice = (client: FakeClient, payload: string, channel = changeChannel('approval')) => client.emit('notification', { channel, payload });

describe('ReplicaChanges', () => {
  it("relays another replica's change, skips its own, and drops what is not a change notice", async () => {
    const { changes, clients, relayed, logged } = await started();
    const [client] = clients;
    expect(client!.queries).toEqual([`LISTEN "${changeChannel('approval')}"`]);
    notice(client!, JSON.stringify({ from: 'replica-b', change }));
    notice(client!, JSON.stringify({ from: 'replica-a', change }));
    notice(client!, JSON.stringify({ from: 'replica-b', change: { ...change, status: 'owned-by-me' } }));
    notice(client!, JSON.stringify({ from: 'replica-b', change: { ...change, arguments: { amount: 5 } } }));
    notice(client!, 'not json');
    notice(client!, JSON.stringify({ from: 'replica-b', change }), 'another_channel');
    expect(relayed).toEqual([change]);
    expect(logged).toEqual(['APPROVAL.CHANGE_NOTICE_INVALID', 'APPROVAL.CHANGE_NOTICE_INVALID', 'APPROVAL.CHANGE_NOTICE_INVALID']);
    await changes.stop();
  });

  it('announces its own changes on the channel, with its replica id', async () => {
    const { changes, notified } = await started();
    changes.announce(change);
    await new Promise((resolve) => setImmediate(resolve));
    expect(notified).toEqual([[changeChannel('approval'), JSON.stringify({ from: 'replica-a', change })]]);
    await changes.stop();
  });

  it('listens again on a new connection after losing one, and lets the connection go on stop', async () => {
    const { changes, clients, released, relayed } = await started();
    clients[0]!.emit('error', new Error('terminating connection'));
    expect(released).toHaveLength(1);
    await new Promise((resolve) => setTimeout(resolve, 1_200));
    expect(clients).toHaveLength(2);
    notice(clients[1]!, JSON.stringify({ from: 'replica-b', change }));
    expect(relayed).toEqual([change]);
    await changes.stop();
    expect(clients[1]!.queries.at(-1)).toBe(`UNLISTEN "${changeChannel('approval')}"`);
    expect(released).toEqual([expect.any(Error), 'released']);
    // Only its own listeners come off: the pool's stay on the connection it gets back.
    expect(clients.map((c) => ['notification', 'error', 'end'].map((e) => c.listenerCount(e)))).toEqual([[0, 1, 0], [0, 1, 0]]);
  });
});
