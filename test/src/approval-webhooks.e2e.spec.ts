import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { createHash, createHmac, randomBytes, randomUUID, timingSafeEqual } from 'node:crypto';
import { once } from 'node:events';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { provisionedNamespace, testKafka, waitFor } from '@gatehouse/kafka/testing';
import pg from 'pg';
import { throwawayDatabase } from './support/database.js';
import { agentKafkaEnv } from './support/kafka-auth.js';
import { freePort, killAll, ROOT, type Started, startNode, startService } from './support/processes.js';

// Reviewer webhooks as an operator meets them: the built approval service as a process, a guarded
// agent process asking for approval, a reviewer deciding over REST, and a receiver written here
// that verifies each delivery's signature as the README tells receivers to, refuses the first
// delivery of every event (503) and takes the retry.
const agentScript = path.join(ROOT, 'test/src/fixtures/approval-agent.mjs');
const dir = mkdtempSync(path.join(tmpdir(), 'gatehouse-webhooks-e2e-'));
const secret = randomBytes(32).toString('base64url');
const secretFile = path.join(dir, 'webhook-secret');
writeFileSync(secretFile, secret, { mode: 0o600 });
const reviewerKey = `rk_${randomUUID()}`;
const reviewers = JSON.stringify([
  { id: 'user:rita', role: 'payments-approver', tenants: ['acme'], connectors: ['payments.refund'], apiKeySha256: createHash('sha256').update(reviewerKey).digest('hex') },
]);
const auth = { authorization: `Bearer ${reviewerKey}`, 'content-type': 'application/json' };

interface Delivery {
  readonly path: string;
  readonly eventId: string;
  readonly type: string;
  readonly body: Record<string, unknown>;
  readonly raw: string;
  readonly answered: number;
}

/** The receiver's check, independent of the service's code: HMAC-SHA256 over "<t>.<raw body>", t within 5 minutes. */
function signatureValid(headers: IncomingHttpHeaders, raw: string): boolean {
  const match = /^t=(\d+),v1=([0-9a-f]{64})$/.exec(String(headers['x-gatehouse-signature'] ?? ''));
  if (!match?.[1] || !match[2]) return false;
  if (Math.abs(Date.now() / 1000 - Number(match[1])) > 300) return false;
  const expected = createHmac('sha256', secret).update(`${match[1]}.${raw}`).digest();
  return timingSafeEqual(expected, Buffer.from(match[2], 'hex'));
}

const deliveries: Delivery[] = [];
let receiver: Server;
let receiverUrl: string;

async function startReceiver(): Promise<void> {
  const seen = new Set<string>();
  receiver = createServer((req, res) => {
    let raw = '';
    req.on('data', (chunk: Buffer) => (raw += chunk.toString('utf8')));
    req.on('end', () => {
      const eventId = String(req.headers['x-gatehouse-event-id'] ?? '');
      const first = !seen.has(`${req.url}|${eventId}`);
      seen.add(`${req.url}|${eventId}`);
      const answered = !signatureValid(req.headers, raw) ? 401 : first ? 503 : 200;
      deliveries.push({ path: req.url ?? '', eventId, type: String(req.headers['x-gatehouse-event']), body: JSON.parse(raw) as Record<string, unknown>, raw, answered });
      res.writeHead(answered).end();
    });
  });
  receiver.listen(0, '127.0.0.1');
  await once(receiver, 'listening');
  receiverUrl = `http://127.0.0.1:${(receiver.address() as { port: number }).port}`;
}

let namespace: string;
let database: { url: string; drop: () => Promise<void> };
let service: Started & { url: string };
let serviceEnv: Record<string, string>;

beforeAll(async () => {
  await startReceiver();
  namespace = await provisionedNamespace(testKafka('approval-webhooks-e2e'), 'e2e');
  database = await throwawayDatabase();
  const port = await freePort();
  serviceEnv = {
    GATEHOUSE_PORT: String(port),
    GATEHOUSE_TOPIC_NAMESPACE: namespace,
    GATEHOUSE_DATABASE_URL: database.url,
    GATEHOUSE_APPROVAL_REVIEWERS: reviewers,
    GATEHOUSE_APPROVAL_INBOX_URL: `http://127.0.0.1:${port}`,
    GATEHOUSE_APPROVAL_WEBHOOKS: JSON.stringify([
      { id: 'acme-json', tenant: 'acme', url: `${receiverUrl}/acme/json`, format: 'json', secretFile },
      { id: 'acme-slack', tenant: 'acme', url: `${receiverUrl}/acme/slack`, format: 'slack', secretFile },
      { id: 'globex-json', tenant: 'globex', url: `${receiverUrl}/globex/json`, format: 'json', secretFile },
    ]),
  };
  service = await startService('approval', serviceEnv);
}, 120_000);

afterAll(async () => {
  killAll();
  await new Promise((resolve) => receiver?.close(resolve));
  await database?.drop();
  rmSync(dir, { recursive: true, force: true });
});

function startAgent(runId: string): Started {
  return startNode(agentScript, [JSON.stringify({ runId, orderId: `o-${runId}`, amount: 40, out: path.join(dir, `${runId}.jsonl`) })], { GATEHOUSE_TOPIC_NAMESPACE: namespace, ...agentKafkaEnv() });
}

/** The reviewer polls the REST list until the run's request is pending, and returns its approval id. */
async function pendingOf(runId: string): Promise<string> {
  return waitFor(
    async () => {
      const res = await fetch(`${service.url}/v1/approvals?status=pending&connector=payments.refund`, { headers: auth });
      const page = (await res.json()) as { items: { approvalId: string; executionId: string }[] };
      return page.items.find((i) => i.executionId === `support/${runId}`)?.approvalId;
    },
    { timeoutMs: 60_000, what: `the pending request of ${runId}` },
  );
}

/** Waits until the run's agent has finished (the decision reached it). */
async function finished(agent: Started): Promise<void> {
  const code = await agent.exited();
  if (code !== 0) throw new Error(`agent exited ${code}: ${agent.output().slice(-2000)}`);
}

const accepted = (approvalId: string, path: string) => deliveries.filter((d) => d.answered === 200 && d.path === path && d.raw.includes(approvalId));

async function delivered(approvalId: string, count: number): Promise<void> {
  await waitFor(async () => (['/acme/json', '/acme/slack'].every((p) => accepted(approvalId, p).length === count) ? true : undefined), {
    timeoutMs: 30_000,
    what: `${count} accepted deliveries of ${approvalId} per target`,
  });
}

describe('reviewer webhooks end to end', () => {
  it('a request and its decision reach the tenant receivers, signed, each retried once after a 503 and taken once; nothing else leaves', async () => {
    const runId = `run-${randomUUID().slice(0, 8)}`;
    const agent = startAgent(runId);
    const approvalId = await pendingOf(runId);
    await delivered(approvalId, 1);
    const decided = await fetch(`${service.url}/v1/approvals/${approvalId}/decision`, { method: 'POST', headers: auth, body: JSON.stringify({ verdict: 'deny', comment: 'not eligible' }) });
    expect(decided.status).toBe(200);
    await finished(agent);
    await delivered(approvalId, 2);

    const json = accepted(approvalId, '/acme/json');
    expect(json.map((d) => d.type)).toEqual(['approval.requested', 'approval.decided']);
    expect(json[0]?.body).toMatchObject({ type: 'approval.requested', approvalId, tenant: 'acme', connectorId: 'payments.refund', status: 'pending', decidedBy: null, link: `${serviceEnv['GATEHOUSE_APPROVAL_INBOX_URL']}/inbox#approval=${approvalId}` });
    expect(json[1]?.body).toMatchObject({ type: 'approval.decided', approvalId, status: 'denied', decidedBy: 'user:rita' });
    const slack = accepted(approvalId, '/acme/slack');
    expect(slack.map((d) => d.type)).toEqual(['approval.requested', 'approval.decided']);
    for (const d of slack) expect(Object.keys(d.body).sort()).toEqual(['blocks', 'text']);
    expect(JSON.stringify(slack[0]?.body)).toContain(`/inbox#approval=${approvalId}`);

    const mine = deliveries.filter((d) => d.raw.includes(approvalId));
    // Every delivery verified; per target and event: one refused, one taken, nothing more.
    expect(mine.every((d) => d.answered !== 401)).toBe(true);
    const perEvent = new Map<string, number[]>();
    for (const d of mine) perEvent.set(`${d.path}|${d.eventId}`, [...(perEvent.get(`${d.path}|${d.eventId}`) ?? []), d.answered]);
    expect([...perEvent.values()]).toEqual([[503, 200], [503, 200], [503, 200], [503, 200]]);
    // The other tenant's receiver hears nothing; no body carries the call's arguments, the reason or the comment.
    expect(deliveries.filter((d) => d.path.startsWith('/globex'))).toEqual([]);
    for (const d of mine) expect(d.raw).not.toMatch(new RegExp(`o-${runId}|not eligible|refunds need|"amount"`));

    // The service records a delivery once it has read the receiver's answer: a moment after the receiver saw it.
    const counts = await waitFor(
      async () => {
        const status = (await (await fetch(`${service.url}/v1/approvals-status`)).json()) as { webhooks: { pending: number } };
        return status.webhooks.pending === 0 ? status.webhooks : undefined;
      },
      { what: 'the deliveries recorded', timeoutMs: 10_000 },
    );
    expect(counts).toEqual({ sent: 4, failed: 0, pending: 0 });
    const client = new pg.Client({ connectionString: database.url });
    await client.connect();
    try {
      const rows = await client.query(`SELECT kind, target, status, attempts, last_status FROM approval.webhook_deliveries WHERE approval_id = $1 ORDER BY (kind = 'decided'), target`, [approvalId]);
      expect(rows.rows).toEqual([
        { kind: 'requested', target: 'acme-json', status: 'sent', attempts: 2, last_status: 200 },
        { kind: 'requested', target: 'acme-slack', status: 'sent', attempts: 2, last_status: 200 },
        { kind: 'decided', target: 'acme-json', status: 'sent', attempts: 2, last_status: 200 },
        { kind: 'decided', target: 'acme-slack', status: 'sent', attempts: 2, last_status: 200 },
      ]);
    } finally {
      await client.end();
    }
  });

  it('a service killed and restarted sends nothing again for what it delivered before, and goes on with live events', async () => {
    const before = deliveries.length;
    service.child.kill('SIGKILL');
    await service.exited();
    service = await startService('approval', serviceEnv);
    const runId = `run-${randomUUID().slice(0, 8)}`;
    const agent = startAgent(runId);
    const approvalId = await pendingOf(runId);
    await delivered(approvalId, 1);
    expect((await fetch(`${service.url}/v1/approvals/${approvalId}/decision`, { method: 'POST', headers: auth, body: JSON.stringify({ verdict: 'approve' }) })).status).toBe(200);
    await finished(agent);
    await delivered(approvalId, 2);
    // Since the restart: only the new approval's two events, to two targets, each refused once and taken once.
    const since = deliveries.slice(before);
    expect(since.every((d) => d.raw.includes(approvalId))).toBe(true);
    expect(since).toHaveLength(8);
  });
});
