// Cold start of the approval service against 0, 100,000 and 1,000,000 approval events of settled
// history (runColdStartBench, @gatehouse/service-runtime/testing, says how). History is approvals, each
// asked for by the agent and decided by the service (a signed request and a signed decision), up to
// 20,000 distinct ones and then their records over again, all settled before the measured starts;
// every size also holds the same 50 live requests.
// The service's first start on each history folds it all and stores its snapshot (printed, not the
// figure); each measured start is a fresh process reading on from that snapshot. Beside it, at
// 100,000 events, the start of before: the same service with its snapshot deleted, reading from
// offset 0. The fold keeps settled approvals for GATEHOUSE_APPROVAL_RETAIN_MS (2 s here, so the
// bench can wait past it; 7 days by default).
//   node services/approval/dist/bench/cold-start.bench.js   (broker and PostgreSQL running)
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { testRequest } from '@gatehouse/approvals/testing';
import { ApprovalDecidedV2, createEvent, signEvent, trustedEntryOf } from '@gatehouse/contracts';
import { TEST_AGENT_KEY, testSigningKey } from '@gatehouse/contracts/testing';
import { createKafkaClient, EventProducer, kafkaConfigFromEnv, provisionTopics } from '@gatehouse/kafka';
import { runColdStartBench } from '@gatehouse/service-runtime/testing';
import { appendRepeated } from '@gatehouse/kafka/testing';
import { recordBenchFigure } from '../../../../tools/bench-results.mjs';
import { reviewersJson, testReviewer } from '../testing/approval-app.js';

const LIVE = 50;
const RETAIN_MS = 2_000;
/** Distinct approvals in a history; the rest of it repeats their records. */
const DISTINCT = 20_000;
const here = path.dirname(fileURLToPath(import.meta.url));

const kafka = createKafkaClient(kafkaConfigFromEnv('approval-cold-start-bench'), () => undefined);
const serviceKey = testSigningKey('approval', 'approval-cold-bench');
const secrets = mkdtempSync(path.join(tmpdir(), 'gatehouse-bench-'));
const keyFile = path.join(secrets, 'approval.key');
writeFileSync(keyFile, serviceKey.privateKey.export({ type: 'pkcs8', format: 'pem' }).toString(), { mode: 0o600 });
const reviewer = testReviewer('user:bench');

await runColdStartBench({
  benchmark: 'approval service cold start',
  source: 'services/approval/src/bench/cold-start.bench.ts',
  name: 'approval',
  main: path.resolve(here, '../main.js'),
  resumeFrom: { from: 'snapshot', schema: 'approval' },
  history: 'settled approval events',
  live: `${LIVE} live requests`,
  held: 'approvals held',
  heldLive: LIVE,
  settleMs: RETAIN_MS + 500,
  env: () => ({
    GATEHOUSE_APPROVAL_REVIEWERS: reviewersJson([reviewer]),
    GATEHOUSE_SIGNING_KEY_FILE: keyFile,
    GATEHOUSE_SIGNING_KEY_ID: serviceKey.keyId,
    GATEHOUSE_TRUSTED_KEYS: JSON.stringify([trustedEntryOf(serviceKey), trustedEntryOf(TEST_AGENT_KEY)]),
    GATEHOUSE_APPROVAL_RETAIN_MS: String(RETAIN_MS),
  }),
  // Distinct requests and the service's decisions on them (up to DISTINCT approvals), then those
  // records over again (duplicates the fold reads and refuses).
  seed: async (namespace, count) => {
    await provisionTopics(kafka, { namespace });
    const pairs = Array.from({ length: Math.min(DISTINCT, count / 2) }, () => testRequest({ inputSchema: {} }).event).flatMap((request) => [
      request,
      signEvent(
        createEvent(
          ApprovalDecidedV2,
          { source: 'service:approval', tenant: 'acme', subject: request.payload.approvalId, causationId: request.id },
          { approvalId: request.payload.approvalId, verdict: 'deny', reviewer: { id: 'user:bench', role: 'approver', kind: 'human' } },
        ),
        serviceKey,
      ),
    ]);
    await appendRepeated(kafka, 'approvals', namespace, pairs, count);
  },
  addLive: async (namespace) => {
    const producer = await EventProducer.connect(kafka, { namespace });
    await producer.publishMany('approvals', Array.from({ length: LIVE }, () => testRequest({ inputSchema: {}, deadlineMs: 3_600_000 }).event));
    await producer.close();
  },
  status: async (base) => {
    const status = (await (await fetch(`${base}/v1/approvals-status`)).json()) as { start: { from: string; records: number }; approvals: number };
    return { start: status.start, held: status.approvals };
  },
  record: recordBenchFigure,
});
