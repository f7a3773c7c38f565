import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { createHash, randomUUID } from 'node:crypto';
import path from 'node:path';
import { RequestContext } from '@mastra/core/request-context';
import { z } from 'zod';
import { AGENT_AUDIT_CONTEXT_KEY, AuditLogger, CONNECTOR_EXECUTION_CONTEXT_KEY, createConnector, invokeConnector } from '@gatehouse/guard';
import { createKafkaApprovalGateway, type KafkaApprovalGateway } from '@gatehouse/guard/approvals';
import { TEST_AGENT_KEY, TEST_KEYRING } from '@gatehouse/contracts/testing';
import { provisionedNamespace, testKafka, waitFor } from '@gatehouse/kafka/testing';
import { type Kafka } from 'kafkajs';
import { throwawayDatabase } from '../src/support/database.js';
import { serviceKafkaEnv } from '../src/support/kafka-auth.js';
import { freePort, killAll, ROOT, startNode, startService } from '../src/support/processes.js';
import { expectStartedFrom, type FoldStartStatus, postDecision, SNAPSHOT_OFTEN, storedSnapshot, topicEnd } from './support/fold-snapshots.js';

// The approval service SIGKILLed while a reviewer is deciding a queue of requests that guarded
// agents wait on, then started again on the same database schema, topics and port. It snapshots
// its fold with nearly every projection commit, so the kill lands among snapshot writes and the
// restart starts from the last snapshot stored, not from offset 0.
const reviewerKey = `rk_${randomUUID()}`;
const reviewers = JSON.stringify([{ id: 'user:rita', role: 'payments-approver', tenants: ['acme'], connectors: ['payments.refund'], apiKeySha256: createHash('sha256').update(reviewerKey).digest('hex') }]);
const auth = { authorization: `Bearer ${reviewerKey}`, 'content-type': 'application/json' };
const CALLS = 40;

let kafka: Kafka;
let namespace: string;
let database: { url: string; drop: () => Promise<void> } | undefined;
let env: Record<string, string>;
let baseUrl: string;
let gateway: KafkaApprovalGateway | undefined;

beforeAll(async () => {
  kafka = testKafka('fault-approval');
  namespace = await provisionedNamespace(kafka, 'fault');
  database = await throwawayDatabase('gh_fault');
  const port = await freePort();
  baseUrl = `http://127.0.0.1:${port}`;
  env = { GATEHOUSE_TOPIC_NAMESPACE: namespace, GATEHOUSE_DATABASE_URL: database.url, GATEHOUSE_APPROVAL_REVIEWERS: reviewers, GATEHOUSE_PORT: String(port), ...SNAPSHOT_OFTEN };
  // The agents' side, in this process, as the `agent` principal: one gateway shared by every call.
  gateway = createKafkaApprovalGateway({ kafka: testKafka('fault-approval-agent', 'agent'), keyring: TEST_KEYRING, agentKey: TEST_AGENT_KEY, namespace, source: 'guard:fault-agent' });
}, 60_000);

afterAll(async () => {
  killAll();
  await gateway?.close().catch(() => undefined);
  await database?.drop();
});

interface Listed {
  readonly approvalId: string;
  readonly executionId: string;
  readonly status: string;
  readonly arguments: { call: string; amount: number };
  readonly settledBy?: { id: string };
}

async function get<T>(route: string): Promise<{ status: number; body: T }> {
  const res = await fetch(`${baseUrl}${route}`, { headers: auth });
  return { status: res.status, body: (await res.json()) as T };
}

/** A reviewer's decision: the HTTP status, or 0 when the connection broke (the service died under it). */
const decide = (approvalId: string, verdict: 'approve' | 'deny') => postDecision(baseUrl, auth, approvalId, verdict);

describe('the approval service killed mid-work', () => {
  it('rebuilds its projection from the log, loses no decision that was answered 200, and every agent runs at most once', async () => {
    const first = await startService('approval', env);
    const executed: string[] = [];
    const refund = createConnector({
      id: 'payments.refund',
      description: 'Refund an order',
      inputSchema: z.object({ call: z.string(), amount: z.number().positive() }),
      permissions: { sideEffect: 'write', requiresApproval: true },
      approvals: { gateway: gateway as KafkaApprovalGateway, deadlineMs: 600_000, waitMs: 180_000 },
      audit: new AuditLogger(),
      execute: async ({ call }) => {
        executed.push(call);
        return { refunded: call };
      },
    });
    // Every call waits on the log for its decision; each settles into a value, never an unhandled rejection.
    const calls = Array.from({ length: CALLS }, (_, i) => {
      const call = `r${i}`;
      const rc = new RequestContext();
      rc.set(AGENT_AUDIT_CONTEXT_KEY, { tenant: 'acme', agentId: 'refund-bot', runId: `run-${call}` });
      rc.set(CONNECTOR_EXECUTION_CONTEXT_KEY, { workflowId: 'support', runId: `run-${call}` });
      return invokeConnector(refund, { call, amount: i + 1 }, { requestContext: rc }).then(
        () => ({ call, outcome: 'ran' }),
        (error: unknown) => ({ call, outcome: (error as { code?: string }).code ?? 'unknown' }),
      );
    });

    const queue = await waitFor(async () => {
      const page = await get<{ items: Listed[] }>('/v1/approvals?status=pending&limit=200');
      return page.body.items.length === CALLS ? page.body.items : undefined;
    }, { what: `${CALLS} pending requests`, timeoutMs: 60_000, intervalMs: 250 });
    const verdictOf = (item: Listed): 'approve' | 'deny' => (Number(item.arguments.call.slice(1)) % 2 === 0 ? 'approve' : 'deny');

    // Four reviewers' requests in flight at a time; the service is killed after the 12th 200,
    // with the others still on the wire.
    const answered = new Map<string, number>();
    let next = 0;
    let killed = false;
    let atKill: FoldStartStatus | undefined;
    const reviewer = async () => {
      while (!killed && next < queue.length) {
        const item = queue[next] as Listed;
        next += 1;
        const status = await decide(item.approvalId, verdictOf(item));
        answered.set(item.approvalId, status);
        if (!killed && [...answered.values()].filter((s) => s === 200).length >= 12) {
          killed = true;
          // The service has been snapshotting under this load: the kill lands among its snapshot writes.
          atKill = (await get<FoldStartStatus>('/v1/approvals-status')).body;
          first.child.kill('SIGKILL');
        }
      }
    };
    await Promise.all(Array.from({ length: 4 }, reviewer));
    expect(await first.exited()).toBeNull();
    const decidedBeforeKill = [...answered].filter(([, s]) => s === 200).map(([id]) => id);
    expect(decidedBeforeKill.length).toBeGreaterThanOrEqual(12);
    expect(decidedBeforeKill.length).toBeLessThan(CALLS);
    expect(atKill?.snapshots.written).toBeGreaterThan(0);
    // The snapshot the restart will load: the last one the killed process committed (never behind the one it reported).
    const stored = await storedSnapshot(database?.url ?? '', 'approval');
    for (const [partition, next] of Object.entries(atKill?.snapshots.lastOffsets ?? {})) expect(BigInt(stored.offsets[partition] ?? '0')).toBeGreaterThanOrEqual(BigInt(next));
    const endBefore = await topicEnd(kafka, 'approvals', namespace);

    const second = await startService('approval', env);
    expect(second.url).toBe(baseUrl);
    // It started from that snapshot and read only what was logged after it.
    const endAfter = await topicEnd(kafka, 'approvals', namespace);
    expectStartedFrom((await get<FoldStartStatus>('/v1/approvals-status')).body, stored, endBefore, endAfter);

    // No lost decision: every decision answered 200 before the kill is there, as answered.
    const expected = new Map(queue.map((item) => [item.approvalId, verdictOf(item) === 'approve' ? 'approved' : 'denied']));
    for (const id of decidedBeforeKill) {
      const { body } = await get<Listed>(`/v1/approvals/${id}`);
      expect({ id, status: body.status, by: body.settledBy?.id }).toEqual({ id, status: expected.get(id), by: 'user:rita' });
    }
    // A decision whose answer was lost with the process either reached the log (and is there) or
    // did not (still pending); deciding again gets 200 or, when it had reached the log, 409.
    for (const item of queue.filter((i) => answered.get(i.approvalId) !== 200)) {
      const before = (await get<Listed>(`/v1/approvals/${item.approvalId}`)).body.status;
      expect(['pending', expected.get(item.approvalId)]).toContain(before);
      const status = await decide(item.approvalId, verdictOf(item));
      expect(status).toBe(before === 'pending' ? 200 : 409);
    }

    // Every waiting agent got exactly the decision made for it: approved ones ran once, denied ones never.
    const outcomes = await Promise.all(calls);
    for (const { call, outcome } of outcomes) expect({ call, outcome }).toEqual({ call, outcome: Number(call.slice(1)) % 2 === 0 ? 'ran' : 'CONNECTOR.APPROVAL_DENIED' });
    const approvedCalls = outcomes.filter((o) => o.outcome === 'ran').map((o) => o.call);
    expect([...executed].sort()).toEqual([...approvedCalls].sort());

    // The projection rebuilt by replaying the topic from offset 0 equals the live one.
    const replay = startNode(path.join(ROOT, 'services/approval/dist/cli/replay.js'), ['--compare', '--schema', 'approval_fault_replay'], { ...serviceKafkaEnv('approval'), ...env });
    expect(await replay.exited()).toBe(0);
    expect(JSON.parse(replay.output().trim().split('\n').at(-1) ?? '{}')).toMatchObject({ equal: true });
    const status = await get<{ phase: string; approvals: number; pending: number; unappliedRecords: number }>('/v1/approvals-status');
    expect(status.body).toMatchObject({ phase: 'running', approvals: CALLS, pending: 0, unappliedRecords: 0 });
  }, 240_000);
});
