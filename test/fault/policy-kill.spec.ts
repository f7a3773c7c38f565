import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { createHash, randomUUID } from 'node:crypto';
import path from 'node:path';
import { isDecisionRecorded } from '@gatehouse/contracts';
import { TEST_KEYRING } from '@gatehouse/contracts/testing';
import { replayTopic } from '@gatehouse/kafka';
import { provisionedNamespace, testKafka, waitFor } from '@gatehouse/kafka/testing';
import { applyPolicyEvent, createPolicyBundlesState } from '@gatehouse/policies';
import { type Kafka } from 'kafkajs';
import { throwawayDatabase } from '../src/support/database.js';
import { serviceKafkaEnv } from '../src/support/kafka-auth.js';
import { freePort, killAll, ROOT, startNode, startService } from '../src/support/processes.js';
import { expectStartedFrom, type FoldStartStatus, SNAPSHOT_OFTEN, storedSnapshot, topicEnd } from './support/fold-snapshots.js';

// The policy service SIGKILLed while operators publish bundle versions and agents ask it for
// decisions, then started again on the same database schema, topics and port. It snapshots its
// fold with nearly every projection commit, so the kill lands among snapshot writes and the
// restart starts from the last snapshot stored, not from offset 0.
const operatorKey = `pk_${randomUUID()}`;
// It publishes, and records the decisions it asks for in tenant acme.
const operators = JSON.stringify([{ id: 'user:ops', role: 'policy-admin', apiKeySha256: createHash('sha256').update(operatorKey).digest('hex'), policySets: '*', publish: true, tenants: ['acme'] }]);
const headers = { authorization: `Bearer ${operatorKey}`, 'content-type': 'application/json' };
const SETS = ['refunds', 'shipping', 'exports'];

let kafka: Kafka;
let namespace: string;
let database: { url: string; drop: () => Promise<void> } | undefined;
let env: Record<string, string>;
let baseUrl: string;

beforeAll(async () => {
  kafka = testKafka('fault-policy');
  namespace = await provisionedNamespace(kafka, 'fault');
  database = await throwawayDatabase('gh_fault');
  const port = await freePort();
  baseUrl = `http://127.0.0.1:${port}`;
  env = { GATEHOUSE_TOPIC_NAMESPACE: namespace, GATEHOUSE_DATABASE_URL: database.url, GATEHOUSE_POLICY_OPERATORS: operators, GATEHOUSE_PORT: String(port), ...SNAPSHOT_OFTEN };
}, 60_000);

afterAll(async () => {
  killAll();
  await database?.drop();
});

const bundle = (policySetId: string, max: number) => ({
  policySetId,
  policies: [
    { id: 'limit', version: String(max), priority: 10, match: { tools: ['payments.refund'] }, rules: { denyWhen: `input.amount > ${max}` } },
    { id: 'support', version: '1', priority: 0, match: { tools: ['payments.refund'] }, rules: { allowWhen: "identity.actor.role == 'support'" } },
  ],
});

/** A call's HTTP status and body; status 0 when the connection broke (the service died under it). */
async function post(route: string, body: unknown): Promise<{ status: number; body: Record<string, unknown> }> {
  try {
    const res = await fetch(`${baseUrl}${route}`, { method: 'POST', headers, body: JSON.stringify(body) });
    return { status: res.status, body: (await res.json()) as Record<string, unknown> };
  } catch {
    return { status: 0, body: {} };
  }
}

async function get<T>(route: string): Promise<T> {
  return (await (await fetch(`${baseUrl}${route}`, { headers })).json()) as T;
}

interface Version {
  readonly policySetId: string;
  readonly revision: number;
  readonly digest: string;
}

describe('the policy service killed mid-work', () => {
  it('rebuilds its versions from the log, loses no publication answered 201 and no decision handed out', async () => {
    const first = await startService('policy', env);
    const published: Version[] = [];
    const decisions: string[] = [];
    let killed = false;
    let atKill: FoldStartStatus | undefined;
    let amount = 0;

    // Two operators per policy set publish on top of each other (the log settles each race with
    // one 201 and one 409); an agent asks for decisions meanwhile. The kill comes once both have
    // had answers, with more of each on the wire.
    const publisher = async (policySetId: string) => {
      while (!killed) {
        amount += 1;
        const res = await post(`/v1/policy-sets/${policySetId}/versions`, { bundle: bundle(policySetId, amount) });
        if (res.status === 201) published.push(res.body as unknown as Version);
        if (!killed && published.length >= 12 && decisions.length >= 3) {
          killed = true;
          // The service has been snapshotting under this load: the kill lands among its snapshot writes.
          atKill = await get<FoldStartStatus>('/v1/policy-status');
          first.child.kill('SIGKILL');
        }
      }
    };
    const asker = async () => {
      while (!killed) {
        if (published.length === 0) {
          await new Promise((r) => setTimeout(r, 20));
          continue;
        }
        const res = await post('/v1/policy-sets/refunds/evaluate', { identity: { agent: 'refund-bot', tenant: 'acme', runId: 'run-fault', actor: { id: 'user:olga', role: 'support' } }, call: { tool: 'payments.refund' }, input: { amount: 5 } });
        if (res.status === 200) decisions.push(res.body['decisionId'] as string);
      }
    };
    await Promise.all([...SETS.flatMap((set) => [publisher(set), publisher(set)]), asker()]);
    expect(await first.exited()).toBeNull();
    expect(published.length).toBeGreaterThanOrEqual(12);
    expect(atKill?.snapshots.written).toBeGreaterThan(0);
    // The snapshot the restart will load: the last one the killed process committed (never behind the one it reported).
    const stored = await storedSnapshot(database?.url ?? '', 'policy');
    for (const [partition, next] of Object.entries(atKill?.snapshots.lastOffsets ?? {})) expect(BigInt(stored.offsets[partition] ?? '0')).toBeGreaterThanOrEqual(BigInt(next));
    const endBefore = await topicEnd(kafka, 'policies', namespace);

    const second = await startService('policy', env);
    expect(second.url).toBe(baseUrl);
    // It started from that snapshot and read only what was logged after it.
    const endAfter = await topicEnd(kafka, 'policies', namespace);
    expectStartedFrom(await get<FoldStartStatus>('/v1/policy-status'), stored, endBefore, endAfter);

    // No two 201s share a revision: the log let one publisher win each.
    const claims = published.map((v) => `${v.policySetId}@${v.revision}`);
    expect(new Set(claims).size).toBe(claims.length);
    // Every publication answered 201 is there after the restart, with its digest.
    for (const v of published) {
      const shown = await get<Version>(`/v1/policy-sets/${v.policySetId}/versions/${v.revision}`);
      expect({ policySetId: shown.policySetId, revision: shown.revision, digest: shown.digest }).toEqual({ policySetId: v.policySetId, revision: v.revision, digest: v.digest });
    }

    // The restarted service's versions are the fold from offset 0: every set's revisions 1..n, gapless.
    const state = createPolicyBundlesState(TEST_KEYRING);
    await replayTopic(kafka, 'policies', { namespace, onRecord: ({ event, logTime }) => void applyPolicyEvent(state, event, logTime.getTime()) });
    for (const set of SETS) {
      const listed = await get<{ items: Version[] }>(`/v1/policy-sets/${set}/versions`);
      const folded = [...state.versions.values()].filter((v) => v.policySetId === set).sort((a, b) => a.revision - b.revision);
      expect(listed.items.map((v) => [v.revision, v.digest])).toEqual(folded.map((v) => [v.revision, v.digest]));
      expect(listed.items.map((v) => v.revision)).toEqual(listed.items.map((_, i) => i + 1));
    }
    const status = await get<{ phase: string; versions: number; unappliedRecords: number }>('/v1/policy-status');
    expect(status).toMatchObject({ phase: 'running', versions: state.versions.size, unappliedRecords: 0 });

    // The operator's check: the projection rebuilt from offset 0 into a fresh schema equals the
    // live one, and the snapshot the killed service left is the fold of the log up to its offsets.
    const replay = startNode(path.join(ROOT, 'services/policy/dist/cli/replay.js'), ['--compare', '--schema', 'policy_fault_replay'], { ...serviceKafkaEnv('policy'), ...env });
    const exited = await replay.exited();
    expect({ exited, output: exited === 0 ? '' : replay.output().slice(-3000) }).toEqual({ exited: 0, output: '' });
    expect(JSON.parse(replay.output().trim().split('\n').at(-1) ?? '{}')).toMatchObject({ equal: true, snapshot: { status: 'equal' } });

    // Every decision handed out before the kill was recorded on the audit topic first.
    expect(decisions.length).toBeGreaterThan(0);
    const recorded = new Set<string>();
    await replayTopic(kafka, 'audit', { namespace, onRecord: ({ event }) => void (isDecisionRecorded(event) && recorded.add(event.payload.decisionId)) });
    expect(decisions.filter((id) => !recorded.has(id))).toEqual([]);

    // And work goes on where the log left it: the next publication gets the next revision.
    const refunds = state.current.get('refunds')?.revision ?? 0;
    const next = await waitFor(async () => {
      const res = await post('/v1/policy-sets/refunds/versions', { bundle: bundle('refunds', 1_000) });
      return res.status === 201 ? res.body : undefined;
    }, { what: 'a publication after the restart', timeoutMs: 30_000 });
    expect(next).toMatchObject({ policySetId: 'refunds', revision: refunds + 1 });
  }, 180_000);
});
