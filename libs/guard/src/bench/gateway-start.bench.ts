// Cold start of an agent's approval gateway (`createKafkaApprovalGateway().start()`) against
// 0, 100,000 and 1,000,000 approval events of settled history, each start in a fresh process (its
// own client, nothing warm), on the broker bench.sh starts (issue 17: start-up follows live state,
// not history). History is settled approvals, requests and their signed decisions, logged before
// the gateway's horizon (its maxApprovalWaitMs + grantTtlMs, 5 s each here so the bench can wait
// past them); every namespace also holds the same live approvals, asked for after it. Beside them,
// the start the gateway made before issue 17 (a read from offset 0), at 0 and 100,000 events: the
// gateway with the longest limits, whose horizon lies before all of this history.
import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { fileURLToPath } from 'node:url';
import { testRequest } from '@gatehouse/approvals/testing';
import { ApprovalDecidedV2, createEvent, signEvent, type TopicEvent } from '@gatehouse/contracts';
import { TEST_KEYS } from '@gatehouse/contracts/testing';
import { createKafkaClient, EventProducer, kafkaConfigFromEnv, provisionTopics } from '@gatehouse/kafka';
import { appendRepeated } from '@gatehouse/kafka/testing';
import { recordBenchFigure } from '../../../../tools/bench-results.mjs';

const SIZES = (process.env['GATEHOUSE_BENCH_GATEWAY_SIZES'] ?? '0,100000,1000000').split(',').map(Number);
const STARTS = Number(process.env['GATEHOUSE_BENCH_GATEWAY_STARTS'] ?? 3);
const LIVE = 50;
/** The bench gateway's limits (gateway-start-child.ts starts it with these): its horizon is 10 s before its start. */
const BENCH_LIMITS = { maxApprovalWaitMs: 5_000, grantTtlMs: 5_000 };
const DISTINCT = 1_000;
const child = fileURLToPath(new URL('./gateway-start-child.js', import.meta.url));

const median = (values: readonly number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)] ?? 0;

/** A request and its decision as the guard and the approval service write them: `DISTINCT` pairs. */
function settledPairs(): TopicEvent<'approvals'>[] {
  return Array.from({ length: DISTINCT }, () => {
    const asked = testRequest({ inputSchema: {}, deadlineMs: 4_000 });
    const decided = signEvent(
      createEvent(ApprovalDecidedV2, { source: 'service:approval', tenant: 'acme', subject: asked.approvalId, causationId: asked.event.id }, { approvalId: asked.approvalId, verdict: 'approve', reviewer: { id: 'user:alice', role: 'approver', kind: 'human' }, useBy: new Date(Date.now() + 4_000).toISOString() }),
      TEST_KEYS.approval,
    );
    return [asked.event, decided];
  }).flat();
}

interface ChildResult {
  readonly startMs: number;
  readonly rssMb: number;
  readonly records: number;
}

function coldStart(namespace: string, limits: 'bench' | 'longest'): Promise<ChildResult> {
  return new Promise((resolve, reject) => {
    const proc = spawn(process.execPath, [child, namespace, limits], { stdio: ['ignore', 'pipe', 'inherit'] });
    let out = '';
    proc.stdout.on('data', (chunk: Buffer) => (out += chunk.toString()));
    proc.on('error', reject);
    proc.on('exit', (code) => {
      const line = out.trim().split('\n').pop() ?? '';
      if (code !== 0) reject(new Error(`gateway start child exited ${code}`));
      else resolve(JSON.parse(line) as ChildResult);
    });
  });
}

export async function benchGatewayStart(): Promise<void> {
  const kafka = createKafkaClient(kafkaConfigFromEnv('gateway-start-bench'));
  const pairs = settledPairs();
  const namespaces = new Map<number, string>();
  const seeding = Date.now();
  for (const size of SIZES) {
    const namespace = `bench-${randomBytes(4).toString('hex')}`;
    await provisionTopics(kafka, { namespace });
    await appendRepeated(kafka, 'approvals', namespace, pairs, size);
    namespaces.set(size, namespace);
  }
  const seeded = Date.now() - seeding;
  // Past the horizon of every seeded record, then the live approvals: pending requests of now.
  await new Promise((r) => setTimeout(r, BENCH_LIMITS.maxApprovalWaitMs + BENCH_LIMITS.grantTtlMs + 1_000));
  for (const namespace of namespaces.values()) {
    const producer = await EventProducer.connect(kafka, { namespace });
    await producer.publishMany('approvals', Array.from({ length: LIVE }, () => testRequest({ inputSchema: {}, deadlineMs: 60_000 }).event));
    await producer.close();
  }
  const results = new Map<string, ChildResult[]>();
  const record = (key: string, result: ChildResult) => results.set(key, [...(results.get(key) ?? []), result]);
  // The starts from the horizon first, all within its window of the live requests (each takes well under a second).
  for (let round = 0; round < STARTS; round += 1) {
    for (const [size, namespace] of namespaces) record(`bench/${size}`, await coldStart(namespace, 'bench'));
  }
  // Then the read from offset 0, once (it takes tens of seconds), and never of 1,000,000 (it outlasts any deadline).
  for (const [size, namespace] of namespaces) if (size <= 100_000) record(`longest/${size}`, await coldStart(namespace, 'longest'));
  const figure = (key: string) => {
    const runs = results.get(key) ?? [];
    return { startMs: median(runs.map((r) => r.startMs)), rssMb: median(runs.map((r) => r.rssMb)), records: median(runs.map((r) => r.records)) };
  };
  const empty = figure('bench/0');
  console.log(`gateway-start: history seeded in ${(seeded / 1000).toFixed(1)} s; median of ${STARTS} cold starts each (a fresh process), one from offset 0`);
  for (const size of SIZES) {
    const bounded = figure(`bench/${size}`);
    const full = results.has(`longest/${size}`) ? figure(`longest/${size}`) : undefined;
    console.log(
      `gateway-start: ${size.toLocaleString('en')} settled events: start ${bounded.startMs.toFixed(0)} ms (${bounded.records} records read), rss ${bounded.rssMb.toFixed(0)} MB` +
        (full ? ` | from offset 0: ${full.startMs.toFixed(0)} ms (${full.records} records read), rss ${full.rssMb.toFixed(0)} MB` : ''),
    );
    const base = { benchmark: 'guard: approval gateway cold start', source: 'libs/guard/src/bench/gateway-start.bench.ts', case: `${size.toLocaleString('en')} settled approval events of history, ${LIVE} live approvals` };
    recordBenchFigure({
      ...base,
      metric: 'start, read from the grant horizon',
      unit: 'ms',
      value: bounded.startMs,
      baseline: 'the same start with no history (0 events)',
      baselineValue: empty.startMs,
      target: { on: 'ratio', atMost: 2, source: 'issue 17: no start at 1,000,000 events more than 2x its start at 0' },
      note: `median of ${STARTS} starts, each in a fresh process; ${bounded.records} records read`,
    });
    recordBenchFigure({
      ...base,
      metric: 'resident memory after start, read from the grant horizon',
      unit: 'MB',
      value: bounded.rssMb,
      baseline: 'the same process after a start with no history (0 events)',
      baselineValue: empty.rssMb,
      target: { on: 'ratio', atMost: 1.5, source: 'issue 17: memory after 1,000,000 settled events within 1.5x of an empty start' },
    });
    if (full) {
      recordBenchFigure({
        ...base,
        metric: 'start, read from the grant horizon',
        unit: 'ms',
        value: bounded.startMs,
        baseline: 'the start of before (a read from offset 0: the longest limits, whose horizon is before all this history)',
        baselineValue: full.startMs,
        note: `${full.records} records read from offset 0, ${bounded.records} from the horizon`,
      });
    }
  }
}
