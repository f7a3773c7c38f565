import { afterAll, describe, expect, it } from '@jest/globals';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { inspect } from 'node:util';
import { GatehouseError } from '@gatehouse/contracts';
import { DEFAULT_KAFKA_PRINCIPALS, desiredAcls, KAFKA_ADMIN_PRINCIPAL, kafkaPrincipalsFromEnv } from './acls.js';
import { kafkaConfigFromEnv } from './config.js';
import { AclOperationTypes, AclResourceTypes, ResourcePatternTypes } from './kafkajs.js';

const dir = mkdtempSync(path.join(tmpdir(), 'gatehouse-kafka-config-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));
const SECRET = 'pw-9f3c2a1b';

function configError(env: NodeJS.ProcessEnv): GatehouseError {
  try {
    kafkaConfigFromEnv('spec', env);
  } catch (error) {
    expect(error).toBeInstanceOf(GatehouseError);
    const e = error as GatehouseError;
    expect(e.code).toBe('KAFKA.CONFIG_INVALID');
    expect(e.message).not.toContain(SECRET);
    expect(JSON.stringify(e.toJSON())).not.toContain(SECRET);
    return e;
  }
  throw new Error('expected KAFKA.CONFIG_INVALID');
}

describe('kafkaConfigFromEnv: SASL', () => {
  it('has no SASL when no mechanism is set', () => {
    expect(kafkaConfigFromEnv('spec', {})).toEqual({ brokers: ['127.0.0.1:9092'], clientId: 'spec' });
  });

  it('reads the password from a file (one trailing newline dropped) and never shows it', () => {
    const file = path.join(dir, 'agent.password');
    writeFileSync(file, `${SECRET}\n`, { mode: 0o600 });
    const config = kafkaConfigFromEnv('spec', {
      GATEHOUSE_KAFKA_SASL_MECHANISM: 'SCRAM-SHA-512',
      GATEHOUSE_KAFKA_USERNAME: 'agent',
      GATEHOUSE_KAFKA_PASSWORD_FILE: file,
      GATEHOUSE_KAFKA_PASSWORD: 'ignored-when-a-file-is-named',
    });
    expect(config.sasl?.mechanism).toBe('scram-sha-512');
    expect(config.sasl?.username).toBe('agent');
    expect(config.sasl?.password).toBe(SECRET);
    expect(JSON.stringify(config)).not.toContain(SECRET);
    expect(inspect(config, { depth: 5 })).not.toContain(SECRET);
    expect(JSON.stringify({ ...config.sasl })).not.toContain(SECRET);
  });

  it('takes the password from the environment when no file is named', () => {
    const config = kafkaConfigFromEnv('spec', { GATEHOUSE_KAFKA_SASL_MECHANISM: 'plain', GATEHOUSE_KAFKA_USERNAME: 'svc-ledger', GATEHOUSE_KAFKA_PASSWORD: SECRET });
    expect(config.sasl).toMatchObject({ mechanism: 'plain', username: 'svc-ledger' });
    expect(config.sasl?.password).toBe(SECRET);
  });

  it('refuses bad or half settings with a typed error naming the variable, never the value', () => {
    const base = { GATEHOUSE_KAFKA_SASL_MECHANISM: 'scram-sha-256', GATEHOUSE_KAFKA_USERNAME: 'agent', GATEHOUSE_KAFKA_PASSWORD: SECRET };
    expect(configError({ ...base, GATEHOUSE_KAFKA_SASL_MECHANISM: 'gssapi' }).details).toEqual({ variable: 'GATEHOUSE_KAFKA_SASL_MECHANISM' });
    expect(configError({ ...base, GATEHOUSE_KAFKA_USERNAME: '' }).details).toEqual({ variable: 'GATEHOUSE_KAFKA_USERNAME' });
    expect(configError({ ...base, GATEHOUSE_KAFKA_PASSWORD: '' }).details).toEqual({ variable: 'GATEHOUSE_KAFKA_PASSWORD_FILE' });
    expect(configError({ ...base, GATEHOUSE_KAFKA_PASSWORD_FILE: path.join(dir, 'missing') }).message).toContain('ENOENT');
    const empty = path.join(dir, 'empty.password');
    writeFileSync(empty, '');
    expect(configError({ ...base, GATEHOUSE_KAFKA_PASSWORD_FILE: empty }).details).toEqual({ variable: 'GATEHOUSE_KAFKA_PASSWORD_FILE' });
    // Credentials without a mechanism would silently connect unauthenticated: refused.
    expect(configError({ GATEHOUSE_KAFKA_USERNAME: 'agent', GATEHOUSE_KAFKA_PASSWORD: SECRET }).details).toEqual({ variable: 'GATEHOUSE_KAFKA_SASL_MECHANISM' });
    expect(configError({ ...base, GATEHOUSE_KAFKA_BROKERS: 'not a broker' }).details).toEqual({ variable: 'GATEHOUSE_KAFKA_BROKERS' });
  });
});

describe('ACL grants', () => {
  const acls = desiredAcls({ namespace: 'ns' });
  const can = (user: string, operation: number, topic: string) =>
    acls.some((a) => a.principal === `User:${user}` && a.operation === operation && a.resourceType === AclResourceTypes.TOPIC && a.resourceName === `ns.${topic}`);
  const P = DEFAULT_KAFKA_PRINCIPALS;

  it('gives the agent principal only requests, audit, policy evaluations, and reading approvals, policies and evaluation replies', () => {
    const agentTopics = acls.filter((a) => a.principal === `User:${P.agent}` && a.resourceType === AclResourceTypes.TOPIC).map((a) => `${a.operation}:${a.resourceName}`);
    expect(agentTopics.sort()).toEqual(
      [
        `${AclOperationTypes.WRITE}:ns.gatehouse.audit.v1`,
        `${AclOperationTypes.WRITE}:ns.gatehouse.approvals.v1`,
        `${AclOperationTypes.READ}:ns.gatehouse.approvals.v1`,
        `${AclOperationTypes.READ}:ns.gatehouse.policies.v1`,
        `${AclOperationTypes.WRITE}:ns.gatehouse.policy-evaluations.v1`,
        `${AclOperationTypes.READ}:ns.gatehouse.policy-evaluations.v1.reply`,
      ].sort(),
    );
  });

  it('lets only the owning service write ledger and policies, and only audit-export read audit', () => {
    const writers = (topic: string) => Object.values(P).filter((u) => can(u, AclOperationTypes.WRITE, topic));
    expect(writers('gatehouse.ledger.v1')).toEqual([P.ledger]);
    expect(writers('gatehouse.policies.v1')).toEqual([P.policy]);
    expect(writers('gatehouse.approvals.v1').sort()).toEqual([P.agent, P.approval].sort());
    expect(Object.values(P).filter((u) => can(u, AclOperationTypes.READ, 'gatehouse.audit.v1'))).toEqual([P.auditExport]);
    expect(Object.values(P).filter((u) => can(u, AclOperationTypes.READ, 'gatehouse.ledger.v1'))).toEqual([P.ledger]);
    expect(can(P.auditExport, AclOperationTypes.CREATE, 'gatehouse.siem.v1')).toBe(true);
    expect(Object.values(P).filter((u) => can(u, AclOperationTypes.READ, 'gatehouse.siem.v1'))).toEqual([P.auditExport]);
  });

  it('grants each reader its own groups and each writer its own transactional ids, by the principal prefix', () => {
    const prefixed = acls.filter((a) => a.resourcePatternType === ResourcePatternTypes.PREFIXED);
    expect(prefixed.filter((a) => a.resourceType === AclResourceTypes.GROUP && a.principal === `User:${P.agent}`).map((a) => a.resourceName)).toEqual([`${P.agent}:`]);
    expect(prefixed.some((a) => a.resourceType === AclResourceTypes.TRANSACTIONAL_ID && a.resourceName === `${P.ledger}:` && a.operation === AclOperationTypes.WRITE)).toBe(true);
    expect(acls.some((a) => a.principal === `User:${KAFKA_ADMIN_PRINCIPAL}`)).toBe(false);
  });

  it('takes role principals from configuration', () => {
    const env = { GATEHOUSE_KAFKA_ACL_PRINCIPALS: '{"agent":"agent-acme"}' };
    expect(kafkaPrincipalsFromEnv(env)).toEqual({ ...P, agent: 'agent-acme' });
    expect(desiredAcls({ principals: kafkaPrincipalsFromEnv(env) }).some((a) => a.principal === 'User:agent-acme')).toBe(true);
    expect(() => kafkaPrincipalsFromEnv({ GATEHOUSE_KAFKA_ACL_PRINCIPALS: '{"robot":"x"}' })).toThrow(GatehouseError);
    expect(() => kafkaPrincipalsFromEnv({ GATEHOUSE_KAFKA_ACL_PRINCIPALS: '{"agent":"a b"}' })).toThrow(GatehouseError);
  });

  it('matches the SCRAM users the local broker is formatted with (infra/kafka/kafka.sh)', () => {
    const script = readFileSync(path.resolve(import.meta.dirname, '../../../infra/kafka/kafka.sh'), 'utf8');
    const users = /^readonly KAFKA_USERS=\(([^)]*)\)/m.exec(script)?.[1]?.trim().split(/\s+/) ?? [];
    expect(users.sort()).toEqual([KAFKA_ADMIN_PRINCIPAL, ...Object.values(DEFAULT_KAFKA_PRINCIPALS)].sort());
  });
});
