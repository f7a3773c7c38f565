import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { type JsonValue } from '@gatehouse/contracts';
import { TEST_KEYRING } from '@gatehouse/contracts/testing';
import { idempotencyStorageKey } from '@gatehouse/guard/connector-sdk';
import { replayTopic, topicPartitions, topicPartitionsFromEnv } from '@gatehouse/kafka';
import { provisionedNamespace, waitFor } from '@gatehouse/kafka/testing';
import { applyLedgerEvent, createLedgerState, type KeyState, ledgerKeyOf } from '@gatehouse/ledger';
import { type Kafka } from 'kafkajs';
import { throwawayDatabase } from '../src/support/database.js';
import { ledgerAgent, ledgerAgentsEnv } from '../src/support/ledger-agent.js';
import { freePort, killAll, ROOT, type Started, startNode, startService } from '../src/support/processes.js';
import { OwnCluster } from './support/own-cluster.js';

// The idempotency ledger scaled out (issue 19): two replicas share the ledger topic's partitions
// on the three-node cluster, four agent processes (two at each replica) race to ship the same
// orders through it, and mid-run one broker and one replica are SIGKILLed, then started again.
// Each order must ship exactly once with every agent told the same result, and afterwards both
// replicas must answer every key alike and agree with the log.
const worker = path.join(ROOT, 'test/fault/fixtures/ledger-fault-worker.mjs');
const dir = mkdtempSync(path.join(tmpdir(), 'gatehouse-scale-ledger-'));
const KEYS = 120;
/** The topic's partition count in this run (GATEHOUSE_TOPIC_PARTITIONS, or the catalog's). */
const PARTITIONS = topicPartitions('ledger', topicPartitionsFromEnv());
const agent = ledgerAgent();

let cluster: OwnCluster | undefined;
let admin: Kafka;
let namespace: string;
let database: { url: string; drop: () => Promise<void> } | undefined;
const replicaEnv: Record<string, string>[] = [];

beforeAll(async () => {
  cluster = await OwnCluster.start('ledger');
  admin = cluster.kafka('scale-ledger-admin');
  namespace = await provisionedNamespace(admin, 'scale');
  database = await throwawayDatabase('gh_scale');
  for (const name of ['ledger-1', 'ledger-2']) {
    replicaEnv.push({
      ...cluster.env('svc-ledger'),
      GATEHOUSE_TOPIC_NAMESPACE: namespace,
      GATEHOUSE_DATABASE_URL: database.url,
      // A fixed port: the agents keep the base URL they were given across the restart.
      GATEHOUSE_PORT: String(await freePort()),
      GATEHOUSE_SCALE_OUT: 'partitions',
      GATEHOUSE_REPLICA_ID: name,
      ...ledgerAgentsEnv(agent),
    });
  }
}, 300_000);

afterAll(async () => {
  killAll();
  await database?.drop();
  await cluster?.reset();
  rmSync(dir, { recursive: true, force: true });
}, 120_000);

interface WorkerReport {
  readonly results: Record<string, { shipped: string; by: number }>;
  readonly refusals: Record<string, number>;
  readonly failures: Record<string, string>;
}

function runWorker(baseUrl: string, effects: string): Started {
  return startNode(worker, [JSON.stringify({ baseUrl, keys: KEYS, effects, concurrency: 4, pendingTtlMs: 3_000, perKeyDeadlineMs: 180_000 })], agent.agentEnv);
}

async function report(started: Started): Promise<WorkerReport> {
  const code = await started.exited();
  const line = started.output().trim().split('\n').filter((l) => l.startsWith('{"results"')).at(-1);
  if (code !== 0 || !line) throw new Error(`worker exited ${code}: ${started.output().slice(-2000)}`);
  return JSON.parse(line) as WorkerReport;
}

const effectLines = (file: string) => (existsSync(file) ? readFileSync(file, 'utf8').split('\n').filter((l) => l.length > 0) : []);

interface LedgerStatus {
  readonly phase: string;
  readonly keys: number;
  readonly owned: Record<string, string>;
}

const status = async (url: string): Promise<LedgerStatus> => (await (await fetch(`${url}/v1/ledger/status`)).json()) as LedgerStatus;

/** Waits until the replicas answer for every partition of the topic between them, none twice. */
async function everyPartitionLive(urls: readonly string[], partitions: number): Promise<void> {
  await waitFor(
    async () => {
      const owned = (await Promise.all(urls.map(status))).flatMap((s) => Object.entries(s.owned).filter(([, stage]) => stage === 'live').map(([p]) => Number(p)));
      return owned.length === partitions && new Set(owned).size === partitions ? true : undefined;
    },
    { what: 'every partition answered by one replica', timeoutMs: 90_000, intervalMs: 250 },
  );
}

/** The ledger fold of the whole topic, as any replica or replay computes it. */
async function foldOfLog(): Promise<Map<string, KeyState>> {
  const state = createLedgerState(TEST_KEYRING);
  await replayTopic(admin, 'ledger', { namespace, timeoutMs: 60_000, onRecord: ({ event, logTime }) => void applyLedgerEvent(state, event, logTime.getTime()) });
  return state.keys;
}

describe('a scaled-out ledger on the replicated cluster', () => {
  it('ships every order once through a broker crash and a replica crash, and its replicas agree afterwards', async () => {
    const effects = path.join(dir, 'effects.log');
    const first = await startService('idempotency-ledger', replicaEnv[0] as Record<string, string>);
    const second = await startService('idempotency-ledger', replicaEnv[1] as Record<string, string>);
    await everyPartitionLive([first.url, second.url], PARTITIONS);
    expect(Object.keys((await status(first.url)).owned).length).toBeGreaterThan(0);
    expect(Object.keys((await status(second.url)).owned).length).toBeGreaterThan(0);

    const workers = [runWorker(first.url, effects), runWorker(first.url, effects), runWorker(second.url, effects), runWorker(second.url, effects)];
    const reports = Promise.all(workers.map(report));
    reports.catch(() => undefined);

    await waitFor(() => (effectLines(effects).length >= 30 ? true : undefined), { what: 'orders shipping', timeoutMs: 120_000, intervalMs: 20 });
    // A broker and a replica crash together; the other replica takes its partitions meanwhile.
    await cluster?.killNode(2);
    first.child.kill('SIGKILL');
    expect(await first.exited()).toBeNull();
    expect(effectLines(effects).length).toBeLessThan(KEYS);
    await everyPartitionLive([second.url], PARTITIONS);
    await cluster?.startNode(2);
    const restarted = await startService('idempotency-ledger', replicaEnv[0] as Record<string, string>);
    const reportsDone = await reports;
    await everyPartitionLive([restarted.url, second.url], PARTITIONS);

    // No order shipped twice, none was left out; every agent was told the executor's result.
    const lines = effectLines(effects);
    expect(new Set(lines.map((l) => l.split(' ')[0])).size).toBe(KEYS);
    expect(lines).toHaveLength(KEYS);
    const executor = new Map(lines.map((l) => [l.split(' ')[0], Number(l.split(' ')[1])]));
    for (const r of reportsDone) {
      expect(r.failures).toEqual({});
      for (const [order, result] of Object.entries(r.results)) expect({ order, ...result }).toEqual({ order, shipped: order, by: executor.get(order) });
    }

    // Both replicas answer every key alike (the other's through its owner), as the log says.
    const folded = await foldOfLog();
    expect(folded.size).toBe(KEYS);
    for (let i = 0; i < KEYS; i += 1) {
      const clientKey = idempotencyStorageKey({ tenant: 'default', connectorId: 'orders.ship', key: `order-${i}` });
      const logged = folded.get(ledgerKeyOf('default', clientKey));
      expect(logged?.status).toBe('completed');
      const views = await Promise.all(
        [restarted.url, second.url].map(async (url) => (await (await fetch(`${url}/v1/idempotency/keys/${clientKey}`, { headers: agent.headers })).json()) as { status: string; result?: JsonValue }),
      );
      const expected = { status: 'completed', result: logged?.status === 'completed' ? logged.result : undefined };
      expect(views.map((v) => ({ status: v.status, result: v.result }))).toEqual([expected, expected]);
    }
    const [a, b] = await Promise.all([status(restarted.url), status(second.url)]);
    expect(a.keys + b.keys).toBe(KEYS);
  }, 480_000);
});
