import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { createHash, randomUUID } from 'node:crypto';
import { once } from 'node:events';
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { provisionedNamespace, testKafka, waitFor } from '@gatehouse/kafka/testing';
import { throwawayDatabase } from './support/database.js';
import { agentKafkaEnv } from './support/kafka-auth.js';
import { killAll, ROOT, type Started, startNode, startService } from './support/processes.js';

// Traces end to end, as an operator meets them: a loopback OTLP/HTTP receiver written here (JSON),
// the built approval service as a process exporting to it through the standard OTEL_* variables,
// and a guarded agent process with an SDK registered the same way. The agent asks for an approval,
// the test decides it over REST, the agent is unblocked: one trace runs from the agent's turn
// through the service and back, and no attribute of any span or metric carries content.

interface KeyValue {
  readonly key: string;
  readonly value: Record<string, unknown>;
}

interface ReceivedSpan {
  readonly service: string;
  readonly scope: string;
  readonly traceId: string;
  readonly spanId: string;
  readonly parentSpanId: string;
  readonly name: string;
  readonly startNs: bigint;
  readonly attributes: Record<string, unknown>;
  readonly links: { readonly traceId: string; readonly spanId: string }[];
}

interface ReceivedPoint {
  readonly service: string;
  readonly metric: string;
  readonly attributes: Record<string, unknown>;
}

/** OTLP/JSON ids are hex; a protobuf-minded encoder may send base64: read both. */
const hexId = (id: unknown): string => {
  const text = typeof id === 'string' ? id : '';
  return /^[\da-f]*$/i.test(text) ? text.toLowerCase() : Buffer.from(text, 'base64').toString('hex');
};

/** An OTLP AnyValue as a plain value (arrays and maps as JSON text). */
function plain(value: Record<string, unknown>): unknown {
  if ('stringValue' in value) return value['stringValue'];
  if ('intValue' in value) return Number(value['intValue']);
  if ('doubleValue' in value) return value['doubleValue'];
  if ('boolValue' in value) return value['boolValue'];
  return JSON.stringify(value);
}

const attributesOf = (list: readonly KeyValue[] | undefined): Record<string, unknown> => Object.fromEntries((list ?? []).map((kv) => [kv.key, plain(kv.value)]));

/** The receiver: accepts OTLP/HTTP JSON on /v1/traces and /v1/metrics and keeps what it was sent. */
class OtlpReceiver {
  readonly spans: ReceivedSpan[] = [];
  readonly points: ReceivedPoint[] = [];
  readonly contentTypes = new Set<string>();
  private readonly server: Server;

  constructor() {
    this.server = createServer((request, response) => {
      const chunks: Buffer[] = [];
      request.on('data', (chunk: Buffer) => chunks.push(chunk));
      request.on('end', () => {
        this.contentTypes.add(String(request.headers['content-type']));
        try {
          const body = JSON.parse(Buffer.concat(chunks).toString('utf8')) as Record<string, unknown>;
          if (request.url === '/v1/traces') this.takeSpans(body);
          if (request.url === '/v1/metrics') this.takePoints(body);
          response.writeHead(200, { 'content-type': 'application/json' }).end('{}');
        } catch {
          response.writeHead(400).end();
        }
      });
    });
  }

  async listen(): Promise<string> {
    this.server.listen(0, '127.0.0.1');
    await once(this.server, 'listening');
    return `http://127.0.0.1:${(this.server.address() as { port: number }).port}`;
  }

  close(): void {
    this.server.close();
  }

  private takeSpans(body: Record<string, unknown>): void {
    for (const rs of (body['resourceSpans'] ?? []) as { resource?: { attributes?: KeyValue[] }; scopeSpans?: { scope?: { name?: string }; spans?: Record<string, unknown>[] }[] }[]) {
      const service = String(attributesOf(rs.resource?.attributes)['service.name']);
      for (const ss of rs.scopeSpans ?? []) {
        for (const span of ss.spans ?? []) {
          this.spans.push({
            service,
            scope: ss.scope?.name ?? '',
            traceId: hexId(span['traceId']),
            spanId: hexId(span['spanId']),
            parentSpanId: hexId(span['parentSpanId']),
            name: String(span['name']),
            startNs: BigInt(String(span['startTimeUnixNano'] ?? '0')),
            attributes: attributesOf(span['attributes'] as KeyValue[] | undefined),
            links: ((span['links'] ?? []) as { traceId: unknown; spanId: unknown }[]).map((l) => ({ traceId: hexId(l.traceId), spanId: hexId(l.spanId) })),
          });
        }
      }
    }
  }

  private takePoints(body: Record<string, unknown>): void {
    type Points = { dataPoints?: { attributes?: KeyValue[] }[] };
    for (const rm of (body['resourceMetrics'] ?? []) as { resource?: { attributes?: KeyValue[] }; scopeMetrics?: { metrics?: ({ name: string } & Record<string, Points | undefined>)[] }[] }[]) {
      const service = String(attributesOf(rm.resource?.attributes)['service.name']);
      for (const sm of rm.scopeMetrics ?? []) {
        for (const metric of sm.metrics ?? []) {
          const data = metric['sum'] ?? metric['gauge'] ?? metric['histogram'] ?? metric['exponentialHistogram'];
          for (const point of data?.dataPoints ?? []) this.points.push({ service, metric: metric.name, attributes: attributesOf(point.attributes) });
        }
      }
    }
  }
}

const agentScript = path.join(ROOT, 'test/src/fixtures/approval-agent.mjs');
const dir = mkdtempSync(path.join(tmpdir(), 'gatehouse-telemetry-e2e-'));
const reviewerKey = `rk_${randomUUID()}`;
const reviewers = JSON.stringify([
  { id: 'user:rita', role: 'payments-approver', tenants: ['acme'], connectors: ['payments.refund'], apiKeySha256: createHash('sha256').update(reviewerKey).digest('hex') },
]);
const auth = { authorization: `Bearer ${reviewerKey}`, 'content-type': 'application/json' };

const receiver = new OtlpReceiver();
let otelEnv: Record<string, string>;
let namespace: string;
let database: { url: string; drop: () => Promise<void> };
let service: Started & { url: string };

beforeAll(async () => {
  const endpoint = await receiver.listen();
  // The standard variables only: JSON over HTTP to the receiver, exported quickly.
  otelEnv = { OTEL_EXPORTER_OTLP_ENDPOINT: endpoint, OTEL_EXPORTER_OTLP_PROTOCOL: 'http/json', OTEL_BSP_SCHEDULE_DELAY: '200', OTEL_METRIC_EXPORT_INTERVAL: '1000' };
  namespace = await provisionedNamespace(testKafka('telemetry-e2e'), 'e2e');
  database = await throwawayDatabase();
  service = await startService('approval', { GATEHOUSE_TOPIC_NAMESPACE: namespace, GATEHOUSE_DATABASE_URL: database.url, GATEHOUSE_APPROVAL_REVIEWERS: reviewers, ...otelEnv });
}, 120_000);

afterAll(async () => {
  killAll();
  receiver.close();
  await database?.drop();
  rmSync(dir, { recursive: true, force: true });
});

async function pendingOf(runId: string): Promise<{ approvalId: string }> {
  return waitFor(
    async () => {
      const res = await fetch(`${service.url}/v1/approvals?status=pending&connector=payments.refund`, { headers: auth });
      const page = (await res.json()) as { items: { approvalId: string; executionId: string }[] };
      return page.items.find((i) => i.executionId === `support/${runId}`);
    },
    { timeoutMs: 60_000, what: `the pending request of ${runId}` },
  );
}

async function finished(agent: Started): Promise<{ text: string; tripwire: string | null }> {
  const code = await agent.exited();
  const line = agent.output().split('\n').find((l) => l.startsWith('AGENT_RESULT '));
  if (code !== 0 || !line) throw new Error(`agent exited ${code}: ${agent.output().slice(-2000)}`);
  return JSON.parse(line.slice('AGENT_RESULT '.length)) as { text: string; tripwire: string | null };
}

const named = (spans: readonly ReceivedSpan[], service: string, name: string) => spans.filter((s) => s.service === service && s.name === name);

describe('OpenTelemetry end to end', () => {
  it('one trace runs from the agent turn through the approval service and back, with no content in any attribute', async () => {
    const runId = `run-${randomUUID().slice(0, 8)}`;
    const orderId = `o-${randomUUID()}`;
    const comment = `comment-${randomUUID()}`;
    const agent = startNode(agentScript, [JSON.stringify({ runId, orderId, amount: 40, out: path.join(dir, `${runId}.jsonl`) })], {
      GATEHOUSE_TOPIC_NAMESPACE: namespace,
      ...agentKafkaEnv(),
      ...otelEnv,
    });
    const { approvalId } = await pendingOf(runId);
    const res = await fetch(`${service.url}/v1/approvals/${approvalId}/decision`, {
      method: 'POST',
      headers: auth,
      body: JSON.stringify({ verdict: 'approve-with-edits', editedArguments: { orderId, amount: 25 }, comment }),
    });
    expect(res.status).toBe(200);
    expect(await finished(agent)).toEqual({ text: 'The refund is done.', tripwire: null });

    // The agent flushed at exit; the service exports every 200 ms.
    const spans = await waitFor(
      () => {
        const seen = receiver.spans;
        const service = seen.filter((s) => s.service === 'gatehouse-approval');
        return named(seen, 'approval-agent', 'invoke_agent refund-bot').length === 1 && service.some((s) => s.name === 'approval.decide') && service.filter((s) => s.name === 'approvals.apply').length >= 3 ? [...seen] : undefined;
      },
      { timeoutMs: 30_000, what: 'the agent turn and the service decision at the receiver' },
    );

    const [turn] = named(spans, 'approval-agent', 'invoke_agent refund-bot');
    const trace = spans.filter((s) => s.traceId === turn?.traceId);
    const inTrace = (service: string, name: string) => named(trace, service, name);
    // The agent's side: the turn, each gate, the tool call and its wait for a person.
    for (const name of ['guard.agent-entry', 'guard.input', 'execute_tool payments.refund', 'guard.approval.wait', 'guard.output']) expect([name, inTrace('approval-agent', name).length]).toEqual([name, 1]);
    expect(inTrace('approval-agent', 'guard.tool').map((s) => s.attributes['gatehouse.code']).sort()).toEqual(['CONNECTOR.ALLOWED', 'CONNECTOR.APPROVAL_GRANTED', 'CONNECTOR.APPROVAL_PENDING']);
    const [wait] = inTrace('approval-agent', 'guard.approval.wait');
    expect(wait?.attributes).toMatchObject({ 'gatehouse.approval_id': approvalId, 'gen_ai.tool.name': 'payments.refund', 'gatehouse.code': 'CONNECTOR.APPROVAL_GRANTED' });

    // The service continued it: it applied the request under the wait, decided under it (linked to
    // the reviewer's HTTP request, a trace of its own), applied its own decision and the agent's use.
    const serviceApplies = inTrace('gatehouse-approval', 'approvals.apply');
    expect(serviceApplies.map((s) => s.attributes['gatehouse.event_type']).sort()).toEqual(['ApprovalDecided', 'ApprovalRequested', 'ApprovalUsed']);
    expect(serviceApplies.find((s) => s.attributes['gatehouse.event_type'] === 'ApprovalRequested')?.parentSpanId).toBe(wait?.spanId);
    const [decide] = inTrace('gatehouse-approval', 'approval.decide');
    expect(decide?.parentSpanId).toBe(wait?.spanId);
    expect(decide?.attributes).toMatchObject({ 'gatehouse.approval_id': approvalId, 'gatehouse.verdict': 'approve-with-edits' });
    const [http] = named(spans, 'gatehouse-approval', 'POST /v1/approvals/:approvalId/decision');
    expect(http?.traceId).not.toBe(turn?.traceId);
    expect(decide?.links).toEqual([{ traceId: http?.traceId, spanId: http?.spanId }]);

    // And back: the agent's gateway applied the decision as a child of the service's decision span.
    const back = inTrace('approval-agent', 'approvals.apply').filter((s) => s.attributes['gatehouse.event_type'] === 'ApprovalDecided');
    expect(back.map((s) => s.parentSpanId)).toEqual([decide?.spanId]);
    expect(new Set([turn, wait, decide, ...serviceApplies, ...back].map((s) => s?.traceId))).toEqual(new Set([turn?.traceId]));

    // No content anywhere: neither the prompt, the arguments (the order), the reviewer's edits and
    // comment, nor the answer, in any attribute of any span or metric point; no content-bearing key.
    const contents = [orderId, comment, 'Please refund', 'The refund is done'];
    const contentKeys = /prompt|completion|messages|arguments|tool\.call\.result|comment|detection/;
    await waitFor(() => (receiver.points.some((p) => p.service === 'gatehouse-approval' && p.metric === 'gatehouse.fold.decision.latency') ? true : undefined), { timeoutMs: 15_000, what: 'the service metrics' });
    const attributeSets = [...receiver.spans.map((s) => ({ where: `${s.service} span ${s.name}`, attributes: s.attributes })), ...receiver.points.map((p) => ({ where: `${p.service} metric ${p.metric}`, attributes: p.attributes }))];
    for (const { where, attributes } of attributeSets) {
      for (const [key, value] of Object.entries(attributes)) {
        expect([where, key, contentKeys.test(key)]).toEqual([where, key, false]);
        for (const content of contents) expect([where, key, String(value).includes(content)]).toEqual([where, key, false]);
      }
    }
    expect(receiver.contentTypes).toEqual(new Set(['application/json']));
  }, 180_000);
});
