// Cold start of the policy service against 0, 100,000 and 1,000,000 policy events of history
// (runColdStartBench, @gatehouse/service-runtime/testing, says how). A published version is never
// settled: the service keeps every one, so what a long policy log holds beyond its versions is
// records the fold reads and refuses. History here is 50 policy sets' first versions, signed by the
// service, then those records over again (replayed publications of a revision already taken);
// the history-free size publishes the same 50 versions as its live state, so every size holds 50.
//   node services/policy/dist/bench/cold-start.bench.js   (broker and PostgreSQL running)
import { createHash, randomBytes } from 'node:crypto';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { createEvent, PolicyBundlePublishedV1, signEvent } from '@gatehouse/contracts';
import { signingEnv, testSigningKey } from '@gatehouse/contracts/testing';
import { createKafkaClient, EventProducer, kafkaConfigFromEnv, provisionTopics } from '@gatehouse/kafka';
import { appendRepeated } from '@gatehouse/kafka/testing';
import { bundleDigest, versionKey } from '@gatehouse/policies';
import { runColdStartBench } from '@gatehouse/service-runtime/testing';
import { recordBenchFigure } from '../../../../tools/bench-results.mjs';
import { POLICY_SOURCE } from '../engine/policy-engine.js';

const SETS = 50;
const here = path.dirname(fileURLToPath(import.meta.url));

const kafka = createKafkaClient(kafkaConfigFromEnv('policy-cold-start-bench'), () => undefined);
const serviceKey = testSigningKey('policy', 'policy-cold-bench');
const signing = signingEnv(serviceKey, [serviceKey]);
// No operator calls the service here; the list is required all the same (a throwaway key's digest).
const operators = JSON.stringify([{ id: 'op:bench', role: 'reader', apiKeySha256: createHash('sha256').update(randomBytes(16)).digest('hex'), policySets: '*' }]);
const versions = () =>
  Array.from({ length: SETS }, (_, i) => {
    const policySetId = `set-${i}`;
    const bundle = { policySetId, policies: [{ id: 'refund-limit', version: '1', priority: 10, match: { tools: ['payments.refund'] }, rules: { denyWhen: `input.amount > ${100 + i}` } }] };
    return signEvent(createEvent(PolicyBundlePublishedV1, { source: POLICY_SOURCE, tenant: 'acme', subject: versionKey(policySetId, 1) }, { policySetId, revision: 1, digest: bundleDigest(bundle), publishedBy: 'op:bench', bundle }), serviceKey);
  });
/** The namespaces whose history already holds the 50 versions. */
const published = new Set<string>();

try {
  await runColdStartBench({
    benchmark: 'policy service cold start',
    source: 'services/policy/src/bench/cold-start.bench.ts',
    name: 'policy',
    main: path.resolve(here, '../main.js'),
    resumeFrom: { from: 'snapshot', schema: 'policy' },
    history: 'policy events',
    live: `${SETS} live versions`,
    held: 'versions held',
    heldLive: SETS,
    settleMs: 0,
    env: () => ({ ...signing.env, GATEHOUSE_POLICY_OPERATORS: operators }),
    seed: async (namespace, count) => {
      await provisionTopics(kafka, { namespace });
      if (count === 0) return;
      await appendRepeated(kafka, 'policies', namespace, versions(), count);
      published.add(namespace);
    },
    addLive: async (namespace) => {
      if (published.has(namespace)) return;
      const producer = await EventProducer.connect(kafka, { namespace });
      await producer.publishMany('policies', versions());
      await producer.close();
    },
    status: async (base) => {
      const status = (await (await fetch(`${base}/v1/policy-status`)).json()) as { start: { from: string; records: number }; versions: number };
      return { start: status.start, held: status.versions };
    },
    record: recordBenchFigure,
  });
} finally {
  signing.remove();
}
