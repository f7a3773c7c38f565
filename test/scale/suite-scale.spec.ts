import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { createHash, randomUUID } from 'node:crypto';
import { existsSync, mkdtempSync, readdirSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { topicName, type TopicEvent } from '@gatehouse/contracts';
import { DEFAULT_KAFKA_PRINCIPALS, replayTopic, topicPartitions, topicPartitionsFromEnv } from '@gatehouse/kafka';
import { provisionedNamespace, topicKeys, waitFor } from '@gatehouse/kafka/testing';
import { type Kafka } from 'kafkajs';
import pg from 'pg';
import { auditReader } from '../src/support/audit-reader.js';
import { throwawayDatabase } from '../src/support/database.js';
import { ledgerAgent, ledgerAgentsEnv } from '../src/support/ledger-agent.js';
import { freePort, killAll, ROOT, type Started, startNode, startService } from '../src/support/processes.js';
import { OwnCluster } from './support/own-cluster.js';

// The whole suite scaled out (issue 19) on the three-node cluster: two replicas of each service
// (approval, idempotency ledger and audit export sharing their topics' partitions; the policy
// service, whose topic has one partition, folding it whole on both), and agent processes under load:
// guarded agents auditing every decision (required sink), ledger workers racing to ship orders
// exactly once, and agents whose refunds wait for a reviewer. Mid-run one broker and one replica of
// each service are SIGKILLed, and started again. Afterwards: no acknowledged decision lost, no tool
// run twice, every approval decided once, every audit record once in the projection and in each
// SIEM feed, and the replicas agree.
const loadAgent = path.join(ROOT, 'test/load/fixtures/load-agent.mjs');
const ledgerWorker = path.join(ROOT, 'test/fault/fixtures/ledger-fault-worker.mjs');
const approvalAgent = path.join(ROOT, 'test/src/fixtures/approval-agent.mjs');
const dir = mkdtempSync(path.join(tmpdir(), 'gatehouse-scale-suite-'));
const siemDir = path.join(dir, 'siem');
const ORDERS = 60;
const REFUNDS = 4;
const SERVICES = ['approval', 'idempotency-ledger', 'audit-export', 'policy'] as const;
type ServiceName = (typeof SERVICES)[number];
const PRINCIPALS: Record<ServiceName, string> = {
  approval: DEFAULT_KAFKA_PRINCIPALS.approval,
  'idempotency-ledger': DEFAULT_KAFKA_PRINCIPALS.ledger,
  'audit-export': DEFAULT_KAFKA_PRINCIPALS.auditExport,
  policy: DEFAULT_KAFKA_PRINCIPALS.policy,
};
const worker = ledgerAgent();
const reader = auditReader();
const reviewerKey = `rk_${randomUUID()}`;
const reviewers = JSON.stringify([{ id: 'user:rita', role: 'payments-approver', tenants: ['acme'], connectors: ['payments.refund'], apiKeySha256: createHash('sha256').update(reviewerKey).digest('hex') }]);
const review = { authorization: `Bearer ${reviewerKey}`, 'content-type': 'application/json' };

let cluster: OwnCluster | undefined;
let admin: Kafka;
let namespace: string;
let database: { url: string; drop: () => Promise<void> } | undefined;
/** Each replica's environment (a fixed port, so a restart is found where it was). */
const envs = new Map<string, Record<string, string>>();

beforeAll(async () => {
  cluster = await OwnCluster.start('suite');
  admin = cluster.kafka('scale-suite-admin');
  namespace = await provisionedNamespace(admin, 'scale');
  database = await throwawayDatabase('gh_scale');
  for (const service of SERVICES) {
    for (const n of [1, 2]) {
      envs.set(`${service}-${n}`, {
        ...cluster.env(PRINCIPALS[service]),
        GATEHOUSE_TOPIC_NAMESPACE: namespace,
        GATEHOUSE_DATABASE_URL: database.url,
        GATEHOUSE_PORT: String(await freePort()),
        GATEHOUSE_SCALE_OUT: 'partitions',
        GATEHOUSE_REPLICA_ID: `${service}-${n}`,
        ...ledgerAgentsEnv(worker),
        ...reader.env,
        GATEHOUSE_APPROVAL_REVIEWERS: reviewers,
        GATEHOUSE_EXPORT_FILE_DIR: siemDir,
        GATEHOUSE_EXPORT_FILE_FORMATS: 'ocsf',
        GATEHOUSE_EXPORT_KAFKA: 'true',
        GATEHOUSE_EXPORT_KAFKA_FORMAT: 'ocsf',
        GATEHOUSE_EXPORT_FROM: 'earliest',
      });
    }
  }
}, 300_000);

afterAll(async () => {
  killAll();
  await database?.drop();
  await cluster?.reset();
  rmSync(dir, { recursive: true, force: true });
}, 120_000);

/** The steps taken so far, with their times: what a failure (or a timeout) reports. */
const steps: string[] = [];
const began = Date.now();
function step(what: string): void {
  steps.push(`${((Date.now() - began) / 1_000).toFixed(1)}s ${what}`);
  if (process.env['GATEHOUSE_SCALE_TRACE']) process.stderr.write(`scale: ${steps.at(-1) ?? ''}\n`);
}

const start = (name: string) => startService(name.replace(/-\d$/, ''), envs.get(name) as Record<string, string>, 120_000);

async function json<T>(url: string, headers: Record<string, string> = {}): Promise<T> {
  return (await (await fetch(url, { headers })).json()) as T;
}

/** Waits until the replicas of `service` answer for every partition of `topicId` between them, none twice. */
async function spread(urls: readonly string[], statusPath: string, partitions: number): Promise<void> {
  await waitFor(
    async () => {
      const owned = await Promise.all(urls.map(async (url) => Object.entries((await json<{ owned?: Record<string, string> }>(`${url}${statusPath}`)).owned ?? {}).filter(([, s]) => s === 'live').map(([p]) => p)));
      const all = owned.flat();
      return all.length === partitions && new Set(all).size === partitions ? true : undefined;
    },
    { what: `every partition answered once (${statusPath})`, timeoutMs: 120_000, intervalMs: 250 },
  );
}

/**
 * The JSON an agent process printed last on a line starting with `prefix` (the prefix kept when it
 * is JSON's own). An agent that has not exited within `withinMs` is killed, and its output reported.
 */
async function report<T>(agent: Started, prefix: string, keep = false, withinMs = 240_000): Promise<T> {
  const late = new Promise<'late'>((resolve) => setTimeout(() => resolve('late'), withinMs).unref());
  if ((await Promise.race([agent.exited(), late])) === 'late') {
    agent.child.kill('SIGKILL');
    throw new Error(`an agent did not finish within ${withinMs} ms; it printed: ${agent.output().slice(-1500)}`);
  }
  const code = await agent.exited();
  const line = agent.output().split('\n').filter((l) => l.startsWith(prefix)).at(-1);
  if (code !== 0 || !line) throw new Error(`agent exited ${code}: ${agent.output().slice(-2000)}`);
  return JSON.parse(keep ? line : line.slice(prefix.length)) as T;
}

const lines = (file: string) => (existsSync(file) ? readFileSync(file, 'utf8').split('\n').filter((l) => l.length > 0) : []);

describe('the suite scaled out on the replicated cluster', () => {
  it('loses no acknowledged decision, runs no tool twice, decides every approval once and exports every record once through crashes', async () => {
    try {
      await suiteRun();
    } catch (error) {
      throw new Error(`${(error as Error).message}\nsteps:\n${steps.join('\n')}`);
    }
  }, 900_000);
});

async function suiteRun(): Promise<void> {
  {
    const running = new Map<string, Started & { url: string }>();
    for (const name of envs.keys()) running.set(name, await start(name));
    const url = (name: string) => (running.get(name) as { url: string }).url;
    await spread([url('idempotency-ledger-1'), url('idempotency-ledger-2')], '/v1/ledger/status', topicPartitions('ledger', topicPartitionsFromEnv()));
    await spread([url('approval-1'), url('approval-2')], '/v1/approvals-status', topicPartitions('approvals', topicPartitionsFromEnv()));
    step('the replicas started and split the partitions');

    // The agents: guarded agents auditing (required), ledger workers (one at each replica), refunds.
    const goFile = path.join(dir, 'go.json');
    const auditors = [0, 1].map((index) => startNode(loadAgent, [JSON.stringify({ index, goFile, out: path.join(dir, `agent-${index}.json`) })], { GATEHOUSE_TOPIC_NAMESPACE: namespace, ...(cluster as OwnCluster).env('agent') }));
    await waitFor(() => (auditors.every((a) => a.output().includes('LOAD_AGENT_READY')) ? true : undefined), { what: 'the auditing agents warmed up', timeoutMs: 120_000 });
    step('the auditing agents warmed up');
    writeFileSync(`${goFile}.tmp`, JSON.stringify({ endAt: Date.now() + 25_000 }));
    renameSync(`${goFile}.tmp`, goFile);
    const effects = path.join(dir, 'effects.log');
    const workers = ['idempotency-ledger-1', 'idempotency-ledger-2'].map((name) =>
      startNode(ledgerWorker, [JSON.stringify({ baseUrl: url(name), keys: ORDERS, effects, concurrency: 3, pendingTtlMs: 3_000, perKeyDeadlineMs: 240_000 })], worker.agentEnv),
    );
    const refund = (i: number) => {
      const runId = `refund-${i}-${randomUUID().slice(0, 6)}`;
      const out = path.join(dir, `${runId}.jsonl`);
      return { runId, out, agent: startNode(approvalAgent, [JSON.stringify({ runId, orderId: `o-${runId}`, amount: 20 + i, out })], { GATEHOUSE_TOPIC_NAMESPACE: namespace, ...(cluster as OwnCluster).env('agent') }) };
    };
    // Half the refunds ask before the crash and wait through it: their requests are pending (on
    // the log, listed) when the broker and the replicas go down; no reviewer has answered yet.
    const refunds = Array.from({ length: REFUNDS / 2 }, (_, i) => refund(i));
    await waitFor(
      async () => {
        const page = await json<{ items?: { executionId: string }[] }>(`${url('approval-2')}/v1/approvals?status=pending`, review).catch(() => ({ items: [] }));
        return refunds.every((r) => page.items?.some((i) => i.executionId === `support/${r.runId}`)) ? true : undefined;
      },
      { what: 'the first refunds pending', timeoutMs: 120_000, intervalMs: 250 },
    );
    step('the first refunds are pending');
    const decided = new Map<string, number>();
    let reviewing = true;
    let reviewer: Promise<void> = Promise.resolve();
    // Mid-run: one broker and one replica of each service crash, and come back.
    await waitFor(() => (lines(effects).length >= 15 ? true : undefined), { what: 'orders shipping', timeoutMs: 120_000, intervalMs: 50 });
    step('orders shipping; crashing a broker and a replica of each service');
    await (cluster as OwnCluster).killNode(2);
    for (const service of SERVICES) {
      const victim = running.get(`${service}-1`) as Started;
      victim.child.kill('SIGKILL');
      await victim.exited();
    }
    await new Promise((r) => setTimeout(r, 3_000));
    await (cluster as OwnCluster).startNode(2);
    for (const service of SERVICES) running.set(`${service}-1`, await start(`${service}-1`));
    step('the broker and the replicas started again');

    // The reviewer approves each pending refund through one replica or the other, as it finds
    // them; the other half of the refunds ask now.
    reviewer = (async () => {
      for (let turn = 0; reviewing; turn += 1) {
        const via = url(turn % 2 === 0 ? 'approval-1' : 'approval-2');
        try {
          const page = await json<{ items: { approvalId: string }[] }>(`${via}/v1/approvals?status=pending`, review);
          for (const { approvalId } of page.items ?? []) {
            const res = await fetch(`${via}/v1/approvals/${approvalId}/decision`, { method: 'POST', headers: review, body: JSON.stringify({ verdict: 'approve' }) });
            if (res.status === 200) decided.set(approvalId, (decided.get(approvalId) ?? 0) + 1);
          }
        } catch {
          // a replica still starting: the next turn asks the other
        }
        await new Promise((r) => setTimeout(r, 300));
      }
    })();
    refunds.push(...Array.from({ length: REFUNDS / 2 }, (_, i) => refund(REFUNDS / 2 + i)));

    step('waiting for the ledger workers and the refund agents');
    let workerReports: { results: Record<string, { by: number }>; failures: Record<string, string> }[];
    let refundResults: { text: string; tripwire: string | null }[];
    try {
      workerReports = await Promise.all(workers.map((w) => report<{ results: Record<string, { by: number }>; failures: Record<string, string> }>(w, '{"results"', true)));
      refundResults = await Promise.all(refunds.map((r) => report<{ text: string; tripwire: string | null }>(r.agent, 'AGENT_RESULT ')));
    } finally {
      // Also when an agent failed: a reviewer still polling would keep Jest from ever exiting.
      reviewing = false;
      await reviewer;
    }
    step('the ledger workers and the refund agents finished');
    await Promise.all(auditors.map((a) => a.exited()));
    await spread([url('idempotency-ledger-1'), url('idempotency-ledger-2')], '/v1/ledger/status', topicPartitions('ledger', topicPartitionsFromEnv()));

    step('the auditing agents finished');
    // Ledger: every order shipped once, every worker told the executor's result.
    const shipped = lines(effects);
    expect(shipped).toHaveLength(ORDERS);
    expect(new Set(shipped.map((l) => l.split(' ')[0])).size).toBe(ORDERS);
    for (const r of workerReports) expect(r.failures).toEqual({});

    // Approvals: each refund ran once, after one decision on the log.
    expect(refundResults.map((r) => r.tripwire)).toEqual(refunds.map(() => null));
    for (const r of refunds) expect(lines(r.out)).toHaveLength(1);
    const approvals: TopicEvent<'approvals'>[] = [];
    await replayTopic(admin, 'approvals', { namespace, timeoutMs: 60_000, onRecord: (rec) => void approvals.push(rec.event) });
    const decisions = new Map<string, number>();
    for (const e of approvals) if (e.type === 'ApprovalDecided') decisions.set(e.payload.approvalId, (decisions.get(e.payload.approvalId) ?? 0) + 1);
    expect([...decisions.values()]).toEqual(refunds.map(() => 1));
    expect([...decided.values()].every((n) => n === 1)).toBe(true);

    // Audit: every decision an agent was told is published is once in the projection and once in each feed.
    const published = [0, 1].flatMap((index) => (JSON.parse(readFileSync(path.join(dir, `agent-${index}.json`), 'utf8')) as { published: string[] }).published);
    expect(published.length).toBeGreaterThan(0);
    const audit = topicName('audit', namespace);
    const ends = new Map((await (async () => {
      const a = admin.admin();
      await a.connect();
      try {
        return (await a.fetchTopicOffsets(audit)).map((o) => [o.partition, BigInt(o.high)] as const);
      } finally {
        await a.disconnect();
      }
    })()));
    const sql = new pg.Client({ connectionString: database?.url });
    await sql.connect();
    try {
      const reached = async (projection: string) => {
        const { rows } = await sql.query<{ partition: number; next_offset: string }>(`SELECT partition, next_offset::text FROM audit_export.projection_offsets WHERE projection = $1 AND topic = $2`, [projection, audit]);
        const at = new Map(rows.map((r) => [r.partition, BigInt(r.next_offset)]));
        return [...ends].every(([p, end]) => (at.get(p) ?? 0n) >= end) ? true : undefined;
      };
      await waitFor(() => reached('decisions'), { what: 'the projection at the end of the audit topic', timeoutMs: 120_000, intervalMs: 250 });
      await waitFor(() => reached('export:siem'), { what: 'the export at the end of the audit topic', timeoutMs: 120_000, intervalMs: 250 });
      const { rows } = await sql.query<{ event_id: string; n: string }>(`SELECT event_id, count(*)::text AS n FROM audit_export.decisions WHERE topic = $1 GROUP BY event_id`, [audit]);
      const projected = new Map(rows.map((r) => [r.event_id, Number(r.n)]));
      expect(published.filter((id) => projected.get(id) !== 1)).toEqual([]);
    } finally {
      await sql.end();
    }
    const fileIds = readdirSync(siemDir)
      .filter((f) => f.startsWith('ocsf-'))
      .flatMap((f) => readFileSync(path.join(siemDir, f), 'utf8').split('\n'))
      .filter((l) => l.length > 0)
      .map((l) => (JSON.parse(l) as { metadata: { uid: string } }).metadata.uid);
    const inFile = new Map<string, number>();
    for (const id of fileIds) inFile.set(id, (inFile.get(id) ?? 0) + 1);
    expect([...inFile.values()].filter((n) => n > 1)).toEqual([]);
    expect(published.filter((id) => inFile.get(id) !== 1)).toEqual([]);
    const onSiem = await topicKeys(admin, `${namespace}.gatehouse.siem.v1`);
    expect(onSiem.length).toBe(new Set(onSiem).size);
    expect(published.filter((id) => !onSiem.includes(id))).toEqual([]);

    // The replicas agree: each key and approval reads the same through either.
    for (const r of refunds) {
      const [one, two] = await Promise.all(['approval-1', 'approval-2'].map((name) => json<{ items: { executionId: string; status: string }[] }>(`${url(name)}/v1/approvals?status=approved`, review)));
      const status = (page: typeof one) => page.items.find((i) => i.executionId === `support/${r.runId}`)?.status;
      expect([status(one), status(two)]).toEqual(['approved', 'approved']);
    }
  }
}
