// Cold start of the idempotency ledger against 0, 100,000 and 1,000,000 ledger events of settled
// history (runColdStartBench, @gatehouse/service-runtime/testing, says how). History is idempotent
// tool calls, each a signed reservation and its completion, up to 20,000 distinct keys and then
// their records over again (replays the fold reads and refuses); every completed key is past the
// service's retention (GATEHOUSE_LEDGER_RETAIN_COMPLETED_MS, 1 s here; unset by default: kept for
// ever), so the service appends their expiries and forgets them. Every size also holds the same 50
// live reservations, pending for an hour.
//   node services/idempotency-ledger/dist/bench/cold-start.bench.js   (broker and PostgreSQL running)
import { createHash, randomBytes, randomUUID } from 'node:crypto';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { createEvent, LedgerKeyCompletedV1, LedgerKeyReservedV1, signEvent } from '@gatehouse/contracts';
import { signingEnv, testSigningKey } from '@gatehouse/contracts/testing';
import { createKafkaClient, EventProducer, kafkaConfigFromEnv, provisionTopics } from '@gatehouse/kafka';
import { appendRepeated } from '@gatehouse/kafka/testing';
import { runColdStartBench } from '@gatehouse/service-runtime/testing';
import { recordBenchFigure } from '../../../../tools/bench-results.mjs';
import { ledgerMeta } from '@gatehouse/ledger-projection';

const LIVE = 50;
const RETAIN_MS = 1_000;
/** Distinct keys in a history; the rest of it repeats their records. */
const DISTINCT = 20_000;
const here = path.dirname(fileURLToPath(import.meta.url));

const kafka = createKafkaClient(kafkaConfigFromEnv('ledger-cold-start-bench'), () => undefined);
const serviceKey = testSigningKey('ledger', 'ledger-cold-bench');
const signing = signingEnv(serviceKey, [serviceKey]);
// No agent calls the service here; the list is required all the same (a throwaway key's digest).
const agents = JSON.stringify([{ id: 'agent:bench', apiKeySha256: createHash('sha256').update(randomBytes(16)).digest('hex'), tenants: ['bench'] }]);
const key = () => createHash('sha256').update(randomUUID()).digest('hex');
const reservation = (pendingTtlMs: number) => {
  const k = key();
  const leaseToken = randomUUID();
  return { leaseToken, event: signEvent(createEvent(LedgerKeyReservedV1, ledgerMeta(k), { key: k, connectorId: 'payments.refund', leaseToken, holder: 'bench', pendingTtlMs }), serviceKey) };
};

try {
  await runColdStartBench({
    benchmark: 'idempotency ledger cold start',
    source: 'services/idempotency-ledger/src/bench/cold-start.bench.ts',
    name: 'ledger',
    main: path.resolve(here, '../main.js'),
    resumeFrom: { from: 'snapshot', schema: 'ledger' },
    history: 'settled ledger events',
    live: `${LIVE} live reservations`,
    held: 'keys held',
    heldLive: LIVE,
    settleMs: RETAIN_MS + 500,
    env: () => ({
      ...signing.env,
      GATEHOUSE_LEDGER_AGENTS: agents,
      GATEHOUSE_LEDGER_RETAIN_COMPLETED_MS: String(RETAIN_MS),
      GATEHOUSE_LEDGER_EXPIRY_SWEEP_MS: '100',
    }),
    seed: async (namespace, count) => {
      await provisionTopics(kafka, { namespace });
      const calls = Array.from({ length: Math.min(DISTINCT, count / 2) }, () => reservation(60_000)).flatMap(({ event, leaseToken }) => [
        event,
        signEvent(createEvent(LedgerKeyCompletedV1, ledgerMeta(event.payload.key), { key: event.payload.key, leaseToken, result: { refund: 'r-1' } }), serviceKey),
      ]);
      await appendRepeated(kafka, 'ledger', namespace, calls, count);
    },
    addLive: async (namespace) => {
      const producer = await EventProducer.connect(kafka, { namespace });
      await producer.publishMany('ledger', Array.from({ length: LIVE }, () => reservation(3_600_000).event));
      await producer.close();
    },
    status: async (base) => {
      const status = (await (await fetch(`${base}/v1/ledger/status`)).json()) as { start: { from: string; records: number }; keys: number };
      return { start: status.start, held: status.keys };
    },
    record: recordBenchFigure,
  });
} finally {
  signing.remove();
}
