import { describe, expect, it } from '@jest/globals';
import { GatehouseError } from '@gatehouse/contracts';
import { type AclEntry } from 'kafkajs';
import { DEFAULT_KAFKA_PRINCIPALS, desiredAcls, KAFKA_ROLES, kafkaPrincipals, LEGACY_GROUP_PREFIXES, managedAcl } from './acls.js';
import { createKafkaClient } from './client.js';
import { kafkaSasl } from './config.js';
import { clientPrincipal, kafkaGroupId, kafkaTransactionalId, ownsId, throwawayGroupId } from './groups.js';
import { AclOperationTypes, AclPermissionTypes, AclResourceTypes, ResourcePatternTypes } from './kafkajs.js';

/** The PREFIXED group and transactional-id grants, per principal. */
function prefixesByPrincipal(acls: readonly AclEntry[], resourceType: number): Map<string, Set<string>> {
  const out = new Map<string, Set<string>>();
  for (const a of acls) {
    if (a.resourceType !== resourceType) continue;
    expect(a.resourcePatternType).toBe(ResourcePatternTypes.PREFIXED);
    out.set(a.principal, (out.get(a.principal) ?? new Set()).add(a.resourceName));
  }
  return out;
}

/** Every pair of prefixes of two different principals where one starts with the other (a shared one included). */
function overlaps(byPrincipal: Map<string, Set<string>>): string[] {
  const found: string[] = [];
  for (const [p, mine] of byPrincipal) {
    for (const [q, theirs] of byPrincipal) {
      if (p === q) continue;
      for (const a of mine) for (const b of theirs) if (b.startsWith(a)) found.push(`${p} ${a} / ${q} ${b}`);
    }
  }
  return found;
}

// Principals whose names are prefixes of each other, as a tenant-per-agent layout names them.
const NESTED = { agent: 'agent', approval: 'agent-acme', ledger: 'agent-acme-eu', policy: 'agent.acme', auditExport: 'agent_' };

describe('consumer groups and transactional ids per principal', () => {
  for (const [name, principals] of [
    ['the default principals', DEFAULT_KAFKA_PRINCIPALS],
    ['principals whose names are prefixes of each other', NESTED],
  ] as const) {
    it(`grants no group or transactional-id prefix two principals share, nor one that is a prefix of another's: ${name}`, () => {
      const acls = desiredAcls({ namespace: 'ns', principals });
      for (const type of [AclResourceTypes.GROUP, AclResourceTypes.TRANSACTIONAL_ID]) {
        const byPrincipal = prefixesByPrincipal(acls, type);
        expect(byPrincipal.size).toBeGreaterThanOrEqual(type === AclResourceTypes.GROUP ? KAFKA_ROLES.length : 4);
        expect(overlaps(byPrincipal)).toEqual([]);
        // Each principal's prefix is its own name and the separator, nothing shorter.
        for (const [principal, prefixes] of byPrincipal) expect([...prefixes]).toEqual([`${principal.slice('User:'.length)}:`]);
      }
    });
  }

  it('names groups and transactional ids under the client principal, the one the ACLs grant it', () => {
    const agent = createKafkaClient({ brokers: ['127.0.0.1:1'], clientId: 'spec', sasl: kafkaSasl('scram-sha-512', 'agent-acme', 'x') }, () => undefined);
    expect(clientPrincipal(agent)).toBe('agent-acme');
    expect(kafkaGroupId(agent, 'policy-client-1')).toBe('agent-acme:policy-client-1');
    expect(throwawayGroupId(agent, 'replay')).toMatch(/^agent-acme:replay-[0-9a-f-]{36}$/);
    expect(kafkaTransactionalId('svc-ledger', 'projection')).toBe('svc-ledger:projection');
    // Without SASL the broker sees ANONYMOUS: provisioning grants it nothing, so an authorizer refuses its groups.
    expect(kafkaGroupId({ brokers: ['127.0.0.1:1'] }, 'tail-x')).toBe('ANONYMOUS:tail-x');
    expect(ownsId('agent', 'agent:replay-1')).toBe(true);
    expect(ownsId('agent', 'agent-acme:replay-1')).toBe(false);
    expect(ownsId('agent', 'svc-policy:policy-evaluator-server')).toBe(false);
  });

  it('refuses a principal name that could carry the separator, a bad purpose, and a client of unknown principal, with KAFKA.CONFIG_INVALID', () => {
    const refused = (fn: () => unknown) => {
      try {
        fn();
      } catch (error) {
        return error instanceof GatehouseError ? error.code : 'other';
      }
      return 'accepted';
    };
    expect(refused(() => kafkaGroupId('agent:evil', 'x'))).toBe('KAFKA.CONFIG_INVALID');
    expect(refused(() => kafkaGroupId('agent', ''))).toBe('KAFKA.CONFIG_INVALID');
    expect(refused(() => kafkaGroupId('agent', 'a b'))).toBe('KAFKA.CONFIG_INVALID');
    expect(refused(() => kafkaPrincipals({ agent: 'agent:acme' }))).toBe('KAFKA.CONFIG_INVALID');
    // Two roles on one principal would share its groups: the agent would be the policy service.
    expect(refused(() => kafkaPrincipals({ agent: DEFAULT_KAFKA_PRINCIPALS.policy }))).toBe('KAFKA.CONFIG_INVALID');
    expect(refused(() => clientPrincipal({} as never))).toBe('KAFKA.CONFIG_INVALID');
  });

  it('manages (so revokes) the shared group prefixes and the dash transactional ids older versions granted, and nothing of anyone else', () => {
    const allow = (principal: string, resourceType: number, resourceName: string): AclEntry => ({
      principal: `User:${principal}`,
      host: '*',
      permissionType: AclPermissionTypes.ALLOW,
      operation: resourceType === AclResourceTypes.GROUP ? AclOperationTypes.READ : AclOperationTypes.WRITE,
      resourceType,
      resourceName,
      resourcePatternType: ResourcePatternTypes.PREFIXED,
    });
    const desired = new Set(desiredAcls({ namespace: 'ns' }).map((a) => `${a.principal}|${a.resourceType}|${a.resourceName}`));
    const legacy = [
      ...LEGACY_GROUP_PREFIXES.map((p) => allow('agent', AclResourceTypes.GROUP, p)),
      allow('svc-policy', AclResourceTypes.GROUP, 'gatehouse-policy-'),
      allow('agent', AclResourceTypes.TRANSACTIONAL_ID, 'agent-'),
      allow('svc-ledger', AclResourceTypes.TRANSACTIONAL_ID, 'svc-ledger-'),
    ];
    for (const e of legacy) {
      expect(managedAcl(e, { namespace: 'ns' })).toBe(true);
      expect(desired.has(`${e.principal}|${e.resourceType}|${e.resourceName}`)).toBe(false);
    }
    expect(managedAcl(allow('agent', AclResourceTypes.GROUP, 'agent:'), { namespace: 'ns' })).toBe(true);
    // Another principal's prefix granted by hand, an unknown principal, an operator's DENY: not provisioning's.
    expect(managedAcl(allow('agent', AclResourceTypes.GROUP, 'svc-policy:'), { namespace: 'ns' })).toBe(false);
    expect(managedAcl(allow('robot', AclResourceTypes.GROUP, 'gatehouse-replay-'), { namespace: 'ns' })).toBe(false);
    expect(managedAcl({ ...allow('agent', AclResourceTypes.GROUP, 'agent:'), permissionType: AclPermissionTypes.DENY }, { namespace: 'ns' })).toBe(false);
  });
});
