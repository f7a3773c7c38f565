// Benchmark (issue 19): the ledger's throughput with two replicas sharing the topic's partitions
// next to one replica alone, measured in one run on the same broker or cluster (bench.sh runs it on
// the three-node cluster of infra/kafka/cluster.sh), as built processes under the same load:
// concurrent agents doing reserve + complete, each agent bound to one replica (the other's
// partitions are forwarded to their owner), for a fixed time after a warm-up.
//   node services/idempotency-ledger/dist/bench/scale-out.bench.js   (broker or cluster running; npm run bench)
import { createHash, randomBytes, randomUUID } from 'node:crypto';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { signingEnv, testSigningKey } from '@gatehouse/contracts/testing';
import { createKafkaClient, kafkaConfigFromEnv, provisionAcls, provisionTopics } from '@gatehouse/kafka';
import { kafkaUserEnv } from '@gatehouse/kafka/testing';
import { createTestDatabase, type ServiceReplica, startReplica, stopProcesses, untilHealthy, untilPartitionsHeld } from '@gatehouse/service-runtime/testing';
import { recordBenchFigure } from '../../../../tools/bench-results.mjs';

const SECONDS = Number(process.env['GATEHOUSE_BENCH_SECONDS'] ?? 15);
const AGENTS = Number(process.env['GATEHOUSE_BENCH_AGENTS'] ?? 32);
const here = path.dirname(fileURLToPath(import.meta.url));
const kafka = createKafkaClient(kafkaConfigFromEnv('ledger-scale-bench'));
const serviceKey = testSigningKey('ledger', 'ledger-scale-bench');
const signing = signingEnv(serviceKey, [serviceKey]);
const apiKey = `lk_bench_${randomBytes(16).toString('hex')}`;
const agents = JSON.stringify([{ id: 'agent:bench', apiKeySha256: createHash('sha256').update(apiKey).digest('hex'), tenants: ['bench'] }]);
const hex = () => createHash('sha256').update(randomUUID()).digest('hex');

/** How many partitions `replica` answers for (`live` in its status). */
async function liveAt(replica: ServiceReplica): Promise<number> {
  const status = (await (await fetch(`${replica.url}/v1/ledger/status`)).json()) as { owned?: Record<string, string> };
  return Object.values(status.owned ?? {}).filter((s) => s === 'live').length;
}

async function post(base: string, route: string, body: unknown): Promise<Record<string, unknown>> {
  const res = await fetch(`${base}${route}`, { method: 'POST', headers: { 'content-type': 'application/json', authorization: `Bearer ${apiKey}` }, body: JSON.stringify(body) });
  const json = (await res.json()) as Record<string, unknown>;
  if (res.status !== 200) throw new Error(`${route} answered ${res.status} ${String(json['code'])}`);
  return json;
}

/** Completed reserve+complete pairs per second over `seconds`, `AGENTS` at once, agent i at replica i mod n. */
async function load(replicas: readonly ServiceReplica[], seconds: number): Promise<{ perSecond: number; failed: number }> {
  let done = 0;
  let failed = 0;
  const end = Date.now() + seconds * 1_000;
  const started = Date.now();
  await Promise.all(
    Array.from({ length: AGENTS }, async (_, i) => {
      const base = (replicas[i % replicas.length] as ServiceReplica).url;
      while (Date.now() < end) {
        const key = hex();
        try {
          const reserved = await post(base, '/v1/idempotency/reservations', { key, connectorId: 'bench', holder: `agent-${i}`, pendingTtlMs: 60_000 });
          await post(base, '/v1/idempotency/completions', { key, leaseToken: reserved['leaseToken'], result: { ok: true } });
          done += 1;
        } catch {
          failed += 1;
        }
      }
    }),
  );
  return { perSecond: done / ((Date.now() - started) / 1_000), failed };
}

async function measure(count: number): Promise<{ perSecond: number; failed: number }> {
  const namespace = `bench-${randomBytes(4).toString('hex')}`;
  await provisionTopics(kafka, { namespace });
  await provisionAcls(kafka, { namespace });
  const admin = kafka.admin();
  await admin.connect();
  const partitions = (await admin.fetchTopicOffsets(`${namespace}.gatehouse.ledger.v1`)).length;
  await admin.disconnect();
  const database = await createTestDatabase('gh_bench');
  const replicas: ServiceReplica[] = [];
  const env = { ...kafkaUserEnv('svc-ledger'), ...signing.env, GATEHOUSE_TOPIC_NAMESPACE: namespace, GATEHOUSE_DATABASE_URL: database.url, GATEHOUSE_LEDGER_AGENTS: agents };
  try {
    // One after another, each once it answers /health (its migrations done): replicas first started
    // together on an empty database race each other's migrations (the service runtime takes no lock).
    for (let i = 0; i < count; i += 1) {
      const replica = await startReplica(path.resolve(here, '../main.js'), `bench-${i + 1}`, env);
      replicas.push(replica);
      await untilHealthy(replica);
    }
    await untilPartitionsHeld(replicas, partitions, liveAt);
    await load(replicas, 3); // warm-up
    return await load(replicas, SECONDS);
  } finally {
    await stopProcesses(replicas);
    await database.drop();
  }
}

try {
  const one = await measure(1);
  const two = await measure(2);
  console.log(`ledger scale-out: ${AGENTS} agents, ${SECONDS} s each`);
  console.log(`ledger scale-out: one replica ${one.perSecond.toFixed(0)} reserve+complete/s (${one.failed} failed)`);
  console.log(`ledger scale-out: two replicas ${two.perSecond.toFixed(0)} reserve+complete/s (${two.failed} failed), ${(two.perSecond / one.perSecond).toFixed(2)}x one`);
  recordBenchFigure({
    benchmark: 'idempotency ledger scale-out',
    source: 'services/idempotency-ledger/src/bench/scale-out.bench.ts',
    case: `${AGENTS} agents doing reserve + complete for ${SECONDS} s, each bound to one replica (the other's partitions forwarded)`,
    metric: 'throughput, two replicas',
    unit: 'pairs/s',
    value: two.perSecond,
    baseline: 'the same load on one replica alone, same run',
    baselineValue: one.perSecond,
    target: { on: 'ratio', atLeast: 1.7, source: 'issue 19: two replicas at least 1.7x one' },
  });
} finally {
  signing.remove();
}
