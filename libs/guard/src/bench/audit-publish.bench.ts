// A guard's required audit publish on the broker bench.sh starts: decisions recorded one by one
// through the Kafka audit sink (each acknowledged before the next, as a gate waits for its
// record), with the agent's signed checkpoints (issue 15: audit sources are verifiable) against
// the same sink without them, measured alternately in one run so both see the same machine.
// The peer is what a team would write without gatehouse: a plain kafkajs producer sending each
// decision as JSON with acks=all to the same topic, awaited one by one, in the same rounds.
import { generateKeyPairSync, randomBytes, randomUUID } from 'node:crypto';
import { agentKeyFromPem } from '@gatehouse/contracts';
import { topicName } from '@gatehouse/contracts';
import { createKafkaClient, EventProducer, kafkaConfigFromEnv, provisionTopics } from '@gatehouse/kafka';
import { peerPackage, recordBenchFigure } from '../../../../tools/bench-results.mjs';
import { AuditLogger } from '../audit/audit-logger.js';
import { kafkaAuditPublisher, kafkaAuditSink } from '../audit/kafka-sink.js';
import { type AuditEvent } from '../audit/types.js';

const ROUNDS = Number(process.env['GATEHOUSE_BENCH_AUDIT_ROUNDS'] ?? 10);
const PER_ROUND = 100;

function decision(index: number): AuditEvent {
  return {
    id: randomUUID(),
    timestamp: new Date().toISOString(),
    boundary: 'tool',
    action: 'tool.execute',
    resource: 'connector:payments.refund',
    decision: 'allowed',
    code: 'CONNECTOR.ALLOWED',
    reason: 'allowed',
    context: { tenant: 'acme', agentId: 'bench', runId: `run-${index % 10}` },
  };
}

const percentile = (sorted: readonly number[], p: number) => sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))] ?? 0;

export async function benchAuditPublish(): Promise<void> {
  const kafka = createKafkaClient(kafkaConfigFromEnv('audit-publish-bench'));
  const namespace = `bench-${randomBytes(4).toString('hex')}`;
  await provisionTopics(kafka, { namespace });
  const producer = await EventProducer.connect(kafka, { namespace });
  const agentKey = agentKeyFromPem('agent-bench', { id: 'agent:bench', tenants: ['acme'] }, generateKeyPairSync('ed25519').privateKey.export({ type: 'pkcs8', format: 'pem' }).toString());
  const options = { publisher: kafkaAuditPublisher(producer), mode: 'required' as const, source: 'guard:bench', defaultTenant: 'acme' };
  const plain = new AuditLogger({ sink: kafkaAuditSink(options) });
  const signed = new AuditLogger({ sink: kafkaAuditSink({ ...options, agentKey }) });
  const samples = { plain: [] as number[], signed: [] as number[], raw: [] as number[] };
  const rawProducer = kafka.producer();
  await rawProducer.connect();
  const auditTopic = topicName('audit', namespace);
  const raw = {
    record: async (event: AuditEvent) => {
      await rawProducer.send({ topic: auditTopic, acks: -1, messages: [{ key: event.context?.tenant ?? null, value: JSON.stringify(event) }] });
    },
  };
  try {
    // Warm-up, then rounds alternating between the two sinks.
    for (let i = 0; i < 50; i += 1) {
      await plain.record(decision(i));
      await signed.record(decision(i));
      await raw.record(decision(i));
    }
    for (let round = 0; round < ROUNDS; round += 1) {
      for (const [name, logger] of [['plain', plain], ['signed', signed], ['raw', raw]] as const) {
        for (let i = 0; i < PER_ROUND; i += 1) {
          const start = process.hrtime.bigint();
          await logger.record(decision(i));
          samples[name].push(Number(process.hrtime.bigint() - start) / 1e6);
        }
      }
    }
  } finally {
    await plain.close();
    await signed.close();
    await producer.close();
    await rawProducer.disconnect();
  }
  const sorted = { plain: [...samples.plain].sort((a, b) => a - b), signed: [...samples.signed].sort((a, b) => a - b), raw: [...samples.raw].sort((a, b) => a - b) };
  const n = samples.plain.length;
  console.log(`audit-publish: ${n} required decisions each way, one by one: with signed checkpoints p50 ${percentile(sorted.signed, 50).toFixed(2)} ms p99 ${percentile(sorted.signed, 99).toFixed(2)} ms | without p50 ${percentile(sorted.plain, 50).toFixed(2)} ms p99 ${percentile(sorted.plain, 99).toFixed(2)} ms`);
  for (const quantile of [50, 99]) {
    recordBenchFigure({
      benchmark: 'guard: audit publish',
      source: 'libs/guard/src/bench/audit-publish.bench.ts',
      case: `${n.toLocaleString('en')} required decisions recorded one by one (each acknowledged, acks=all)`,
      metric: `latency p${quantile}, with the agent's signed checkpoints`,
      unit: 'ms',
      value: percentile(sorted.signed, quantile),
      baseline: 'the same Kafka audit sink without checkpoints, alternating rounds',
      baselineValue: percentile(sorted.plain, quantile),
      note: 'a checkpoint (one Ed25519 signature over the digests of up to 100 records) is published beside the decisions, never on the path of one',
    });
  }
  // Records per second, one at a time (the way a gate waits): the count over the summed latencies.
  const rate = (series: readonly number[]) => series.length / (series.reduce((sum, ms) => sum + ms, 0) / 1000);
  console.log(`audit-publish: plain kafkajs acks=all p50 ${percentile(sorted.raw, 50).toFixed(2)} ms; rates: sink ${rate(samples.plain).toFixed(0)}/s, kafkajs ${rate(samples.raw).toFixed(0)}/s`);
  recordBenchFigure({
    benchmark: 'guard: audit publish',
    source: 'libs/guard/src/bench/audit-publish.bench.ts',
    case: `${n.toLocaleString('en')} required decisions recorded one by one (each acknowledged, acks=all)`,
    metric: 'decisions recorded per second, without checkpoints',
    unit: 'decisions/s',
    value: rate(samples.plain),
    baseline: 'a plain kafkajs producer sending each decision as JSON, acks=all, same topic, alternating rounds',
    baselineValue: rate(samples.raw),
    peer: peerPackage('kafkajs'),
    target: { on: 'ratio', atLeast: 0.8, source: 'issue 22: audit publish ≥ 0.8x a plain acks=all producer' },
    note: 'the sink validates, wraps the decision in its versioned envelope, keys it by tenant and carries trace headers; the plain producer sends the JSON alone',
  });
}
