import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { randomUUID } from 'node:crypto';
import { auditCheckpoint, createEvent, DecisionRecordedV1, eventDigest, SIGNING_ENV, trustedEntryOf } from '@gatehouse/contracts';
import { testAgentKey } from '@gatehouse/contracts/testing';
import { AuditLogger, kafkaAuditPublisher, kafkaAuditSink } from '@gatehouse/guard/audit';
import { EventProducer } from '@gatehouse/kafka';
import { provisionedNamespace, testKafka } from '@gatehouse/kafka/testing';

// `gatehouse audit verify` run as an operator runs it: the built CLI as a process.
const cli = path.resolve(import.meta.dirname, '../dist/main.js');
const dir = mkdtempSync(path.join(tmpdir(), 'gatehouse-verify-'));
let namespace: string;
// Each guard instance signs its checkpoints with its own agent key; the operator trusts both.
const agentKeys = { a: testAgentKey('agent:a', ['acme']), b: testAgentKey('agent:b', ['acme']) };
const globexKey = testAgentKey('agent:globex', ['globex']);
const trusted = { [SIGNING_ENV.trustedKeys]: JSON.stringify([agentKeys.a, agentKeys.b, globexKey].map(trustedEntryOf)) };

function gatehouse(...args: string[]): { code: number | null; out: string } {
  return gatehouseWith(trusted, ...args);
}

function gatehouseWith(env: Record<string, string>, ...args: string[]): { code: number | null; out: string } {
  const { [SIGNING_ENV.trustedKeys]: _keys, [SIGNING_ENV.trustedKeysFile]: _file, ...rest } = process.env;
  const result = spawnSync(process.execPath, [cli, ...args], { encoding: 'utf8', env: { ...rest, ...env }, timeout: 120_000 });
  return { code: result.status, out: `${result.stdout}${result.stderr}` };
}

beforeAll(async () => {
  const kafka = testKafka('cli-verify');
  namespace = await provisionedNamespace(kafka, 'verify');
  const producer = await EventProducer.connect(kafka, { namespace });
  // Two producers (two guard instances), 10 decisions each, all on one run (one partition).
  for (const instance of ['a', 'b'] as const) {
    const sink = kafkaAuditSink({ publisher: kafkaAuditPublisher(producer), mode: 'required', source: `guard:${instance}`, defaultTenant: 'acme', agentKey: agentKeys[instance] });
    const audit = new AuditLogger({ sink });
    for (let i = 0; i < 10; i += 1) {
      await audit.record({ boundary: 'tool', action: 'tool.execute', resource: 'connector:x', decision: i % 3 === 0 ? 'denied' : 'allowed', code: `C${i}`, reason: 'static', context: { tenant: 'acme', runId: 'run-verify' } });
    }
    await audit.close();
  }
  await producer.close();
}, 120_000);

afterAll(() => rmSync(dir, { recursive: true, force: true }));

type Report = {
  ok: boolean;
  events: number;
  findings: { kind: string; producer: string }[];
  sources: { ok: boolean; verified: number; unverified: number; forbidden: number; findings: { kind: string; id: string; reason?: string }[] } | null;
};

function verifyFile(lines: string[]): { code: number | null; report: Report } {
  const file = path.join(dir, `variant-${Math.random().toString(36).slice(2)}.jsonl`);
  writeFileSync(file, `${lines.join('\n')}\n`);
  const { code, out } = gatehouse('audit', 'verify', '--file', file, '--json');
  return { code, report: JSON.parse(out.trim()) as Report };
}

describe('gatehouse audit verify', () => {
  let lines: string[];
  let checkpoints: string[];

  it('finds the chain intact and every record verified for its source, on the topic and in a dump of it', () => {
    const onTopic = gatehouse('audit', 'verify', '--topic', '--namespace', namespace);
    expect(onTopic.code).toBe(0);
    expect(onTopic.out).toContain('20 events, 2 producers, 0 unchained, chain intact');
    expect(onTopic.out).toMatch(/audit sources: 20 verified, 0 unverified, 0 forbidden \(\d+ checkpoints\)/);
    const file = path.join(dir, 'dump.jsonl');
    expect(gatehouse('audit', 'dump', '--out', file, '--namespace', namespace).code).toBe(0);
    // The dump holds the checkpoints too: a copy of the log verifies on its own.
    const dumped = readFileSync(file, 'utf8').trim().split('\n');
    lines = dumped.filter((l) => !l.includes('"type":"AuditChainCheckpoint"'));
    checkpoints = dumped.filter((l) => l.includes('"type":"AuditChainCheckpoint"'));
    expect(lines).toHaveLength(20);
    expect(checkpoints.length).toBeGreaterThanOrEqual(2);
    expect(verifyFile(dumped)).toMatchObject({ code: 0, report: { ok: true, events: 20, sources: { verified: 20 } } });
  });

  it('reads a log without checkpoints as unverified (exit 3), and without trusted keys judges no source', () => {
    expect(verifyFile(lines)).toMatchObject({ code: 3, report: { ok: false, findings: [], sources: { ok: true, verified: 0, unverified: 20 } } });
    const file = path.join(dir, 'no-keys.jsonl');
    writeFileSync(file, `${[...lines, ...checkpoints].join('\n')}\n`);
    const keyless = gatehouseWith({}, 'audit', 'verify', '--file', file);
    expect(keyless.code).toBe(3);
    expect(keyless.out).toContain('chain intact');
    expect(keyless.out).toContain('audit sources: not verified, no trusted keys');
  });

  it('flags a record written as service:approval in acme under a checkpoint of a globex agent key', () => {
    const forged = createEvent(DecisionRecordedV1, { source: 'service:approval', tenant: 'acme', subject: 'run-verify' }, { decisionId: randomUUID(), boundary: 'approval', outcome: 'allowed', code: 'APPROVAL.GRANTED', reason: 'static' });
    const checkpoint = auditCheckpoint({ source: 'service:approval', producer: 'service:approval#forged', digests: [eventDigest(forged)] }, globexKey);
    const { code, report } = verifyFile([...lines, ...checkpoints, JSON.stringify(forged), JSON.stringify(checkpoint)]);
    expect(code).toBe(1);
    expect(report.sources).toMatchObject({ ok: false, verified: 20, forbidden: 1 });
    expect(report.sources?.findings).toEqual(
      expect.arrayContaining([expect.objectContaining({ kind: 'forbidden', id: forged.id, reason: 'forbidden-source' }), expect.objectContaining({ kind: 'forbidden-checkpoint', id: checkpoint.id })]),
    );
  });

  it('detects an edited event', () => {
    const edited = [...lines, ...checkpoints];
    edited[4] = (edited[4] as string).replace('"reason":"static"', '"reason":"nothing to see"');
    expect(edited[4]).not.toBe(lines[4]);
    const { code, report } = verifyFile(edited);
    expect(code).toBe(1);
    expect(report.findings.map((f) => f.kind)).toEqual(['altered']);
  });

  it('detects a dropped event', () => {
    const { code, report } = verifyFile(lines.filter((_, i) => i !== 6));
    expect(code).toBe(1);
    expect(report.findings.map((f) => f.kind)).toEqual(['gap']);
  });

  it('detects reordered events', () => {
    const swapped = [...lines];
    [swapped[2], swapped[3]] = [swapped[3] as string, swapped[2] as string];
    const { code, report } = verifyFile(swapped);
    expect(code).toBe(1);
    expect(report.findings.map((f) => f.kind)).toContain('reordered');
  });

  it('detects a duplicated event', () => {
    const { code, report } = verifyFile([...lines, lines[8] as string]);
    expect(code).toBe(1);
    expect(report.findings.map((f) => f.kind)).toEqual(['duplicate']);
  });

  it('refuses bad usage with exit code 2', () => {
    expect(gatehouse('audit', 'verify').code).toBe(2);
    expect(gatehouse('policy', 'lint').code).toBe(2);
  });
});
