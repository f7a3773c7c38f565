import { afterAll, describe, expect, it } from '@jest/globals';
import { execFileSync, spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, renameSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { createKafkaClient, kafkaSasl } from '@gatehouse/kafka';

// A broker of its own (state dir and ports), so this spec cannot disturb the suite's broker.
const root = path.resolve(import.meta.dirname, '../..');
const script = path.join(root, 'infra/kafka/kafka.sh');
const stateDir = mkdtempSync(path.join(tmpdir(), 'gatehouse-infra-'));
const env = {
  ...process.env,
  GATEHOUSE_STATE_DIR: stateDir,
  GATEHOUSE_KAFKA_PORT: '29092',
  GATEHOUSE_KAFKA_CONTROLLER_PORT: '29093',
};

function kafkaSh(command: string): { code: number | null; out: string } {
  const result = spawnSync('bash', [script, command], { env, encoding: 'utf8', timeout: 240_000 });
  return { code: result.status, out: `${result.stdout}${result.stderr}` };
}

function brokerPids(): string[] {
  const out = spawnSync('pgrep', ['-f', '--', `-Dgatehouse.kafka=${stateDir}`], { encoding: 'utf8' }).stdout;
  return out.split('\n').filter((l) => l.trim().length > 0);
}

afterAll(() => {
  kafkaSh('stop');
  rmSync(stateDir, { recursive: true, force: true });
});

describe('infra/kafka/kafka.sh', () => {
  it('starts one broker, reuses it on a second start, and stops leaving no process', async () => {
    const first = kafkaSh('start');
    expect(first.code).toBe(0);
    expect(brokerPids()).toHaveLength(1);

    // Passwords generated on first start, readable by the user only, never printed.
    const secrets = path.join(stateDir, 'secrets/kafka');
    for (const user of ['admin', 'agent', 'svc-approval', 'svc-ledger', 'svc-policy', 'svc-audit-export']) {
      const file = path.join(secrets, `${user}.password`);
      expect(statSync(file).mode & 0o777).toBe(0o600);
      expect(first.out).not.toContain(readFileSync(file, 'utf8'));
    }
    const password = readFileSync(path.join(secrets, 'admin.password'), 'utf8');
    const kafka = createKafkaClient({ brokers: ['127.0.0.1:29092'], clientId: 'infra-spec', sasl: kafkaSasl('scram-sha-512', 'admin', password) });
    const admin = kafka.admin();
    await admin.connect();
    const cluster = await admin.describeCluster();
    await admin.disconnect();
    expect(cluster.brokers).toHaveLength(1);
    // Without credentials the broker refuses the client.
    const anonymous = createKafkaClient({ brokers: ['127.0.0.1:29092'], clientId: 'infra-spec-anonymous' }, () => undefined).admin();
    await expect(anonymous.connect().then(() => anonymous.describeCluster())).rejects.toThrow();
    await anonymous.disconnect();

    const second = kafkaSh('start');
    expect(second.code).toBe(0);
    expect(second.out).toContain('already running');
    expect(brokerPids()).toHaveLength(1);
    expect(kafkaSh('status').code).toBe(0);

    const stop = kafkaSh('stop');
    expect(stop.code).toBe(0);
    expect(brokerPids()).toHaveLength(0);
    expect(kafkaSh('status').code).toBe(3);
    // Logs went to files, not the console.
    expect(execFileSync('ls', [path.join(stateDir, 'kafka/logs')], { encoding: 'utf8' })).toContain('server.log');
  });

  it('refuses data formatted without the SCRAM users (state from before authentication) and says to reset', () => {
    const marker = path.join(stateDir, 'kafka/scram-users');
    renameSync(marker, `${marker}.away`);
    try {
      const start = kafkaSh('start');
      expect(start.code).toBe(1);
      expect(start.out).toContain('formatted without SASL/SCRAM users');
      expect(start.out).toContain('kafka.sh reset');
      expect(brokerPids()).toHaveLength(0);
    } finally {
      renameSync(`${marker}.away`, marker);
    }
  });
});
