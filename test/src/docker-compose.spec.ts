import { describe, expect, it } from '@jest/globals';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { SIGNING_ENV, TOPIC_LIST } from '@gatehouse/contracts';
import { DATABASE_NAME, ENV, SERVICES } from '@gatehouse/service-runtime';
import { parse } from 'yaml';

const root = path.resolve(import.meta.dirname, '../..');
interface ComposeService {
  image?: string;
  environment?: Record<string, string>;
  ports?: string[];
  command?: string[];
}
const compose = parse(readFileSync(path.join(root, 'docker-compose.yml'), 'utf8'), { merge: true }) as {
  services: Record<string, ComposeService>;
};

describe('docker-compose.yml matches the no-Docker topology', () => {
  it('runs the Kafka version the scripts fetch from Maven Central', () => {
    const pom = readFileSync(path.join(root, 'infra/kafka/pom.xml'), 'utf8');
    const version = /<kafka\.version>([^<]+)<\/kafka\.version>/.exec(pom)?.[1];
    expect(version).toBeDefined();
    expect(compose.services['kafka']?.image).toBe(`apache/kafka:${version}`);
    expect(compose.services['kafka-init']?.image).toBe(`apache/kafka:${version}`);
    expect(compose.services['kafka']?.ports).toEqual(['127.0.0.1:9092:9092']);
    expect(compose.services['postgres']?.ports).toEqual(['127.0.0.1:5432:5432']);
  });

  it('creates exactly the catalog topics with their partitions and configs', () => {
    const script = (compose.services['kafka-init']?.command ?? []).join('\n');
    const created = [...script.matchAll(/--topic (\S+) --partitions (\d+)((?: --config \S+)*)/g)].map((m) => ({
      name: m[1],
      partitions: Number(m[2]),
      configs: Object.fromEntries([...(m[3] ?? '').matchAll(/--config ([^=\s]+)=(\S+)/g)].map((c) => [c[1], c[2]])),
    }));
    expect(created).toEqual(TOPIC_LIST.map((t) => ({ name: t.name, partitions: t.partitions, configs: { ...t.configs } })));
  });

  it('runs each service on its catalog port with the environment the code reads', () => {
    const known = new Set<string>([...Object.values(ENV), ...Object.values(SIGNING_ENV)]);
    for (const service of Object.values(SERVICES)) {
      const entry = compose.services[service.name];
      expect(entry).toBeDefined();
      expect(entry?.ports).toEqual([`127.0.0.1:${service.port}:${service.port}`]);
      expect(entry?.command).toEqual(['node', `services/${service.name}/dist/main.js`]);
      const env = entry?.environment ?? {};
      for (const name of Object.keys(env)) expect(known).toContain(name);
      expect(env[ENV.port]).toBe(String(service.port));
      expect(env[ENV.kafkaBrokers]).toBe('kafka:29092');
      const url = new URL(env[ENV.databaseUrl] ?? '');
      expect(url.username).toBe(service.dbRole);
      expect(url.pathname).toBe(`/${DATABASE_NAME}`);
    }
  });

  it('creates the same roles and schemas as the service catalog', () => {
    const ensure = readFileSync(path.join(root, 'infra/postgres/ensure.sh'), 'utf8');
    const pairs = /^PAIRS="([^"]+)"/m.exec(ensure)?.[1]?.split(' ') ?? [];
    expect(pairs.sort()).toEqual(Object.values(SERVICES).map((s) => `${s.dbRole}:${s.schema}`).sort());
    expect(/^DB=(\S+)/m.exec(ensure)?.[1]).toBe(DATABASE_NAME);
  });
});

describe('docker-compose signing keys', () => {
  const compose = parse(readFileSync(path.join(path.resolve(import.meta.dirname, '../..'), 'docker-compose.yml'), 'utf8')) as {
    services: Record<string, { environment?: Record<string, string>; secrets?: string[] }>;
    secrets?: Record<string, { file: string }>;
  };

  it('gives each granting service its own signing key and every one the trusted keys, as mounted secrets', () => {
    for (const [service, signer] of [['approval', 'approval'], ['idempotency-ledger', 'ledger'], ['policy', 'policy']] as const) {
      const entry = compose.services[service];
      expect(entry?.environment?.[SIGNING_ENV.signingKeyFile]).toBe(`/run/secrets/${signer}-signing-key`);
      expect(entry?.environment?.[SIGNING_ENV.trustedKeysFile]).toBe('/run/secrets/trusted-keys');
      expect(entry?.secrets).toEqual([`${signer}-signing-key`, 'trusted-keys']);
      expect(compose.secrets?.[`${signer}-signing-key`]?.file).toBe(`.gatehouse/secrets/signing/${signer}.pem`);
    }
    expect(compose.secrets?.['trusted-keys']?.file).toBe('.gatehouse/secrets/signing/trusted-keys.json');
    // audit-export judges audit records' sources (their signed checkpoints) with the same keys.
    expect(compose.services['audit-export']?.environment?.[SIGNING_ENV.trustedKeysFile]).toBe('/run/secrets/trusted-keys');
    expect(compose.services['audit-export']?.secrets).toEqual(['trusted-keys']);
  });
});
