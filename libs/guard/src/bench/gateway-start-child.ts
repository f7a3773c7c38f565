// One cold start of an agent's approval gateway, in a process of its own (gateway-start.bench.ts
// spawns it): `node gateway-start-child.js <namespace> <bench|longest>` prints one JSON line with
// the start's duration, the process's resident memory after it, and the records it read.
import { MAX_APPROVAL_WAIT_MS, MAX_GRANT_TTL_MS } from '@gatehouse/approvals';
import { TEST_AGENT_KEY, TEST_KEYRING } from '@gatehouse/contracts/testing';
import { createKafkaClient, kafkaConfigFromEnv } from '@gatehouse/kafka';
import { createKafkaApprovalGateway } from '../approvals/kafka-approval-gateway.js';

const [namespace, limits] = process.argv.slice(2);
if (!namespace || (limits !== 'bench' && limits !== 'longest')) throw new Error('usage: gateway-start-child <namespace> <bench|longest>');
const kafka = createKafkaClient(kafkaConfigFromEnv('gateway-start-child'), () => undefined);
const gateway = createKafkaApprovalGateway({
  kafka,
  keyring: TEST_KEYRING,
  agentKey: TEST_AGENT_KEY,
  namespace,
  source: 'guard:bench',
  replayTimeoutMs: 60_000,
  // The bench's limits (gateway-start.bench.ts BENCH_LIMITS), or the longest a deployment can set.
  ...(limits === 'bench' ? { maxApprovalWaitMs: 5_000, grantTtlMs: 5_000 } : { maxApprovalWaitMs: MAX_APPROVAL_WAIT_MS, grantTtlMs: MAX_GRANT_TTL_MS }),
});
const started = process.hrtime.bigint();
await gateway.start();
const startMs = Number(process.hrtime.bigint() - started) / 1e6;
const rssMb = process.memoryUsage().rss / 2 ** 20;
const { records } = gateway.stats();
await gateway.close();
process.stdout.write(`${JSON.stringify({ startMs, rssMb, records })}\n`);
