import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { type JsonValue } from '@gatehouse/contracts';
import { TEST_KEYRING } from '@gatehouse/contracts/testing';
import { replayTopic } from '@gatehouse/kafka';
import { provisionedNamespace, testKafka, waitFor } from '@gatehouse/kafka/testing';
import { idempotencyStorageKey } from '@gatehouse/guard/connector-sdk';
import { applyLedgerEvent, createLedgerState, type KeyState, ledgerKeyOf } from '@gatehouse/ledger';
import { type Kafka } from 'kafkajs';
import { throwawayDatabase } from '../src/support/database.js';
import { agentKafkaEnv, serviceKafkaEnv } from '../src/support/kafka-auth.js';
import { ledgerAgent, ledgerAgentsEnv } from '../src/support/ledger-agent.js';
import { freePort, killAll, ROOT, type Started, startNode, startService } from '../src/support/processes.js';
import { expectStartedFrom, type FoldStartStatus, SNAPSHOT_OFTEN, storedSnapshot, topicEnd } from './support/fold-snapshots.js';

// The idempotency ledger SIGKILLed while two agent processes race to ship the same 150 orders
// through it, and started again on the same database schema, topics and port. It snapshots its
// fold with nearly every projection commit, so the kill lands among snapshot writes and the
// restart starts from the last snapshot stored, not from offset 0.
const worker = path.join(ROOT, 'test/fault/fixtures/ledger-fault-worker.mjs');
const dir = mkdtempSync(path.join(tmpdir(), 'gatehouse-fault-ledger-'));
const KEYS = 150;
// The agents' identity at the ledger: one agent key of the tenant their calls are in.
const agent = ledgerAgent();

let kafka: Kafka;
let namespace: string;
let database: { url: string; drop: () => Promise<void> } | undefined;
let env: Record<string, string>;

beforeAll(async () => {
  kafka = testKafka('fault-ledger');
  namespace = await provisionedNamespace(kafka, 'fault');
  database = await throwawayDatabase('gh_fault');
  // A fixed port: the agents keep the base URL they were given across the restart.
  env = { GATEHOUSE_TOPIC_NAMESPACE: namespace, GATEHOUSE_DATABASE_URL: database.url, GATEHOUSE_PORT: String(await freePort()), ...ledgerAgentsEnv(agent), ...SNAPSHOT_OFTEN };
}, 60_000);

afterAll(async () => {
  killAll();
  await database?.drop();
  rmSync(dir, { recursive: true, force: true });
});

interface WorkerReport {
  readonly results: Record<string, { shipped: string; by: number }>;
  readonly refusals: Record<string, number>;
  readonly failures: Record<string, string>;
}

function runWorker(baseUrl: string, effects: string): Started {
  // A takeover after 3 s of silence: long enough that a live holder always completes first
  // (its side effect is one file append), short enough to keep the test brief.
  return startNode(worker, [JSON.stringify({ baseUrl, keys: KEYS, effects, concurrency: 6, pendingTtlMs: 3_000 })], { ...agentKafkaEnv(), ...agent.agentEnv });
}

async function report(started: Started): Promise<WorkerReport> {
  const code = await started.exited();
  const line = started.output().trim().split('\n').filter((l) => l.startsWith('{"results"')).at(-1);
  if (code !== 0 || !line) throw new Error(`worker exited ${code}: ${started.output().slice(-2000)}`);
  return JSON.parse(line) as WorkerReport;
}

const effectLines = (file: string) => (existsSync(file) ? readFileSync(file, 'utf8').split('\n').filter((l) => l.length > 0) : []);

/**
 * The ledger fold from offset 0, as any replica or replay computes it, and how many events of each
 * type it accepted (two agents may append a takeover of the same stale key: the second is on the
 * log too, rejected).
 */
async function foldFromZero(): Promise<{ keys: Map<string, KeyState>; types: Record<string, number> }> {
  const state = createLedgerState(TEST_KEYRING);
  const types: Record<string, number> = {};
  await replayTopic(kafka, 'ledger', {
    namespace,
    onRecord: ({ event, logTime }) => {
      if (applyLedgerEvent(state, event, logTime.getTime()).kind === 'accepted') types[event.type] = (types[event.type] ?? 0) + 1;
    },
  });
  return { keys: state.keys, types };
}

describe('the idempotency ledger killed mid-work', () => {
  it('rebuilds its state from the log, executes no tool twice and loses no recorded result', async () => {
    const effects = path.join(dir, 'effects.log');
    const first = await startService('idempotency-ledger', env);
    const workers = [runWorker(first.url, effects), runWorker(first.url, effects)];
    const reports = Promise.all(workers.map(report));
    // Not awaited yet: attach the handler now, a worker failing early must not go unhandled.
    reports.catch(() => undefined);

    await waitFor(() => (effectLines(effects).length >= 40 ? true : undefined), { what: 'orders shipping', timeoutMs: 60_000, intervalMs: 20 });
    // The ledger has been snapshotting under this load: the kill lands among its snapshot writes.
    const snapshotsAtKill = (await (await fetch(`${first.url}/v1/ledger/status`)).json()) as FoldStartStatus;
    first.child.kill('SIGKILL');
    expect(await first.exited()).toBeNull();
    const atKill = effectLines(effects).length;
    expect(atKill).toBeLessThan(KEYS);
    expect(snapshotsAtKill.snapshots.written).toBeGreaterThan(0);
    // The snapshot the restart will load: the last one the killed process committed (never behind the one it reported).
    const stored = await storedSnapshot(database?.url ?? '', 'ledger');
    for (const [partition, next] of Object.entries(snapshotsAtKill.snapshots.lastOffsets ?? {})) expect(BigInt(stored.offsets[partition] ?? '0')).toBeGreaterThanOrEqual(BigInt(next));
    const endBefore = await topicEnd(kafka, 'ledger', namespace);

    const second = await startService('idempotency-ledger', env);
    // It started from that snapshot and read only what was logged after it.
    const endAfter = await topicEnd(kafka, 'ledger', namespace);
    expectStartedFrom((await (await fetch(`${second.url}/v1/ledger/status`)).json()) as FoldStartStatus, stored, endBefore, endAfter);
    const [a, b] = await reports;

    // No tool ran twice, none was left out: one effect line per order.
    const lines = effectLines(effects);
    const orders = lines.map((l) => l.split(' ')[0]);
    expect(new Set(orders).size).toBe(KEYS);
    expect(lines).toHaveLength(KEYS);
    // Both agents were refused while the ledger was down and kept going; none gave up on an order.
    expect(a?.failures).toEqual({});
    expect(b?.failures).toEqual({});
    expect((a?.refusals['CONNECTOR.IDEMPOTENCY_STORE_FAILED'] ?? 0) + (b?.refusals['CONNECTOR.IDEMPOTENCY_STORE_FAILED'] ?? 0)).toBeGreaterThan(0);
    // Both agents got the same result for every order: the executor's.
    const executor = new Map(lines.map((l) => [l.split(' ')[0], Number(l.split(' ')[1])]));
    expect(a?.results).toEqual(b?.results);
    for (const [order, result] of Object.entries(a?.results ?? {})) expect(result).toEqual({ shipped: order, by: executor.get(order) });

    // A third agent asking for every order again runs nothing and gets the recorded results:
    // an execution interrupted by the kill (result never recorded) is reconciled, not repeated.
    const again = await report(runWorker(second.url, effects));
    expect(again.failures).toEqual({});
    expect(again.results).toEqual(a?.results);
    expect(effectLines(effects)).toHaveLength(KEYS);

    // The restarted ledger answers from state rebuilt from the log: its REST view of every key
    // equals the fold from offset 0, and every key is completed with the executor's result.
    const { keys: folded, types } = await foldFromZero();
    expect(folded.size).toBe(KEYS);
    // The agent asks for its own key of each order; the ledger stores it scoped by the agent's tenant.
    const clientKeys = new Map(
      Array.from({ length: KEYS }, (_, i) => {
        const clientKey = idempotencyStorageKey({ tenant: 'default', connectorId: 'orders.ship', key: `order-${i}` });
        return [ledgerKeyOf('default', clientKey), clientKey] as const;
      }),
    );
    // Attempts the kill interrupted were taken over after their TTL and reconciled, every one.
    expect(types['LedgerKeyReconciled'] ?? 0).toBe(types['LedgerKeyTakenOver'] ?? 0);
    for (const [key, state] of folded) {
      expect(state.status).toBe('completed');
      expect(clientKeys.has(key)).toBe(true);
      const res = await fetch(`${second.url}/v1/idempotency/keys/${clientKeys.get(key)}`, { headers: agent.headers });
      const view = (await res.json()) as { status: string; result?: JsonValue };
      expect({ status: view.status, result: view.result }).toEqual({ status: 'completed', result: state.status === 'completed' ? state.result : undefined });
    }
    const status = (await (await fetch(`${second.url}/v1/ledger/status`)).json()) as { phase: string; keys: number; unappliedRecords: number };
    expect(status).toMatchObject({ phase: 'running', keys: KEYS, unappliedRecords: 0 });

    // The operator's check: the projection rebuilt by replaying the topic into a fresh schema
    // equals the live one, row for row.
    const replay = startNode(path.join(ROOT, 'services/idempotency-ledger/dist/cli/replay.js'), ['--compare', '--schema', 'ledger_fault_replay'], { ...serviceKafkaEnv('idempotency-ledger'), ...env });
    expect(await replay.exited()).toBe(0);
    expect(JSON.parse(replay.output().trim().split('\n').at(-1) ?? '{}')).toMatchObject({ equal: true });
  }, 240_000);
});
