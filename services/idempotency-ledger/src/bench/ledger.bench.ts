// Benchmark: the ledger's decision latency on loopback, next to the raw transport round trip
// (same HTTP stack, no ledger work), measured in one run against a real broker, PostgreSQL
// and the built service started as a process.
//   node services/idempotency-ledger/dist/bench/ledger.bench.js   (broker running; npm run bench)
import { spawn } from 'node:child_process';
import { createHash, randomBytes, randomUUID } from 'node:crypto';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { signingEnv, testSigningKey } from '@gatehouse/contracts/testing';
import { createKafkaClient, kafkaConfigFromEnv, provisionTopics } from '@gatehouse/kafka';
import { createTestDatabase, freePort, percentile } from '@gatehouse/service-runtime/testing';
import { recordBenchFigure } from '../../../../tools/bench-results.mjs';

const CALLS = Number(process.env['GATEHOUSE_BENCH_CALLS'] ?? 400);
const here = path.dirname(fileURLToPath(import.meta.url));

async function timed(label: string, work: () => Promise<void>): Promise<{ label: string; p50: number; p99: number }> {
  for (let i = 0; i < 50; i += 1) await work(); // warm-up
  const samples: number[] = [];
  for (let i = 0; i < CALLS; i += 1) {
    const start = process.hrtime.bigint();
    await work();
    samples.push(Number(process.hrtime.bigint() - start) / 1e6);
  }
  samples.sort((a, b) => a - b);
  return { label, p50: percentile(samples, 50), p99: percentile(samples, 99) };
}

const namespace = `bench-${randomBytes(4).toString('hex')}`;
const kafka = createKafkaClient(kafkaConfigFromEnv('ledger-bench'));
await provisionTopics(kafka, { namespace });
const database = await createTestDatabase('gh_bench');
// The service signs every ledger event: a throwaway key, trusted by its own fold only.
const serviceKey = testSigningKey('ledger', 'ledger-bench');
const signing = signingEnv(serviceKey, [serviceKey]);
// The bench calls as an agent: a throwaway API key, of which the service knows only the digest.
const apiKey = `lk_bench_${randomBytes(16).toString('hex')}`;
const agents = JSON.stringify([{ id: 'agent:bench', apiKeySha256: createHash('sha256').update(apiKey).digest('hex'), tenants: ['bench'] }]);
const port = await freePort();
const service = spawn(process.execPath, [path.resolve(here, '../main.js')], {
  env: { ...process.env, ...signing.env, GATEHOUSE_PORT: String(port), GATEHOUSE_TOPIC_NAMESPACE: namespace, GATEHOUSE_DATABASE_URL: database.url, GATEHOUSE_LEDGER_AGENTS: agents },
  stdio: 'ignore',
});
const base = `http://127.0.0.1:${port}`;
try {
  for (let i = 0; ; i += 1) {
    try {
      if ((await fetch(`${base}/health`)).status === 200) break;
    } catch {
      // starting
    }
    if (i > 300) throw new Error('ledger service did not start');
    await new Promise((r) => setTimeout(r, 200));
  }
  const post = async (route: string, body: unknown) => {
    // The echo carries the same header (it reads none): the baseline sends what a ledger call sends.
    const res = await fetch(`${base}${route}`, { method: 'POST', headers: { 'content-type': 'application/json', authorization: `Bearer ${apiKey}` }, body: JSON.stringify(body) });
    const json = (await res.json()) as Record<string, unknown>;
    if (res.status !== 200) throw new Error(`${route} answered ${res.status}`);
    return json;
  };
  const hex = () => createHash('sha256').update(randomUUID()).digest('hex');
  const budgetKey = hex();
  const echo = async () => void (await post('/v1/ledger/echo', { key: hex(), leaseToken: randomUUID(), result: { ok: true } }));
  const raw = await timed('raw transport (POST echo)', echo);
  // reserve+complete is two requests in a row: its baseline is two echoes in a row, sampled as one.
  const rawTwice = await timed('two raw round trips', async () => {
    await echo();
    await echo();
  });
  const reserveComplete = await timed('reserve + complete', async () => {
    const key = hex();
    const reserved = await post('/v1/idempotency/reservations', { key, connectorId: 'bench', holder: 'bench', pendingTtlMs: 60_000 });
    await post('/v1/idempotency/completions', { key, leaseToken: reserved['leaseToken'], result: { ok: true } });
  });
  const rate = await timed('rate-limit check', async () => void (await post('/v1/rate/consumptions', { budgetKey, algorithm: 'sliding-window', count: 10_000, windowMs: 3_600_000 })));
  const fmt = (r: { p50: number; p99: number }) => `p50 ${r.p50.toFixed(2)} ms, p99 ${r.p99.toFixed(2)} ms`;
  console.log(`ledger: ${CALLS} sequential calls each on loopback`);
  console.log(`ledger: raw transport round trip ${fmt(raw)}`);
  console.log(`ledger: two raw round trips in a row ${fmt(rawTwice)}`);
  console.log(`ledger: reserve+complete ${fmt(reserveComplete)} (${(reserveComplete.p50 / rawTwice.p50).toFixed(1)}x two raw round trips at p50)`);
  console.log(`ledger: rate-limit check ${fmt(rate)} (${(rate.p50 / raw.p50).toFixed(1)}x one raw round trip at p50)`);
  const cases = [
    {
      case: `reserve + complete (${CALLS} sequential, loopback)`,
      measured: reserveComplete,
      baseline: 'two POST /v1/ledger/echo in a row: same HTTP stack, JSON and filters, no ledger work',
      base: rawTwice,
      p50Target: { on: 'ratio', atMost: 3, source: 'issue 22: ledger reserve + complete p50 ≤ 3x two raw HTTP round trips' } as const,
    },
    { case: `rate-limit check (${CALLS} sequential, loopback)`, measured: rate, baseline: 'POST /v1/ledger/echo: same HTTP stack, JSON and filters, no ledger work', base: raw, p50Target: undefined },
  ];
  for (const c of cases) {
    for (const quantile of ['p50', 'p99'] as const) {
      recordBenchFigure({
        benchmark: 'idempotency ledger',
        source: 'services/idempotency-ledger/src/bench/ledger.bench.ts',
        case: c.case,
        metric: `latency ${quantile}`,
        unit: 'ms',
        value: c.measured[quantile],
        baseline: c.baseline,
        baselineValue: c.base[quantile],
        ...(quantile === 'p50' && c.p50Target !== undefined ? { target: c.p50Target } : {}),
      });
    }
  }
} finally {
  // A service that failed to start has exited already and would never emit 'exit' again.
  if (service.exitCode === null && service.signalCode === null) {
    const exited = new Promise((r) => service.once('exit', r));
    service.kill('SIGTERM');
    await exited;
  }
  await database.drop();
  signing.remove();
}
