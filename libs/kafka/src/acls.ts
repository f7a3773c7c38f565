import { GatehouseError, type TopicId, topicName } from '@gatehouse/contracts';
import {
  type AclEntry,
  type AclOperationTypes as AclOperation,
  type AclResourceTypes as AclResource,
  type Kafka,
  type ResourcePatternTypes as ResourcePattern,
} from 'kafkajs';
import { ownedIdPrefix, PRINCIPAL_NAME } from './groups.js';
import { AclOperationTypes, AclPermissionTypes, AclResourceTypes, ResourcePatternTypes } from './kafkajs.js';

/**
 * Who may do what on the cluster: the one place the grants are written down. `provisionAcls`
 * turns this data into Kafka ACLs for one topic namespace. The super user (`admin`: the broker
 * itself, provisioning, operator tools, the tests' default client) needs no ACL.
 */

/** The kinds of client, each with its own Kafka principal. */
export const KAFKA_ROLES = ['agent', 'approval', 'ledger', 'policy', 'auditExport'] as const;
export type KafkaRole = (typeof KAFKA_ROLES)[number];

/** The principal (SCRAM user) of each role unless configured otherwise; infra/kafka/kafka.sh creates these users. */
export const DEFAULT_KAFKA_PRINCIPALS: Readonly<Record<KafkaRole, string>> = {
  agent: 'agent',
  approval: 'svc-approval',
  ledger: 'svc-ledger',
  policy: 'svc-policy',
  auditExport: 'svc-audit-export',
};

/** The super user: bypasses ACLs (`super.users` in the broker config). */
export const KAFKA_ADMIN_PRINCIPAL = 'admin';

/** Environment variable: JSON object overriding role principals, e.g. `{"agent":"agent-acme"}`. */
export const KAFKA_ACL_PRINCIPALS_ENV = 'GATEHOUSE_KAFKA_ACL_PRINCIPALS';

const SERVICES: readonly KafkaRole[] = ['approval', 'ledger', 'policy', 'auditExport'];
const EVERYONE: readonly KafkaRole[] = ['agent', ...SERVICES];

export interface TopicGrant {
  /** Roles that append (WRITE; DESCRIBE is implied). */
  readonly writers: readonly KafkaRole[];
  /** Roles that read (READ; DESCRIBE is implied). */
  readonly readers: readonly KafkaRole[];
  /** Roles that create the topic themselves (CREATE), for topics outside the catalog. */
  readonly creators?: readonly KafkaRole[];
  /**
   * Roles that read the topic's configuration (DESCRIBE_CONFIGS): a fold that refuses to start on
   * a topic whose retention could delete records it still needs (`assertTopicRetention`).
   */
  readonly configReaders?: readonly KafkaRole[];
}

/**
 * Per catalog topic, who writes and who reads. Kafka authorizes per topic, not per event type:
 * agents append approval *requests* and the approval service appends *decisions* to the same
 * topic, so both may WRITE `approvals`. What stops an agent's forged decision is the approval
 * service's signature on it, which every fold verifies (see "Who may write what" in DESIGN.md).
 */
export const TOPIC_GRANTS: Readonly<Record<TopicId, TopicGrant>> = {
  // Every gate records its decisions; the services report security events there too.
  audit: { writers: EVERYONE, readers: ['auditExport'] },
  // Agents ask and await the grant; the approval service decides (and folds the topic).
  approvals: { writers: ['agent', 'approval'], readers: ['agent', 'approval'], configReaders: ['approval'] },
  // Only the ledger service: agents reach the ledger over its REST API.
  ledger: { writers: ['ledger'], readers: ['ledger'], configReaders: ['ledger'] },
  // Only the policy service publishes; every gate and service loads them.
  policies: { writers: ['policy'], readers: EVERYONE },
  // Agents not written in TypeScript ask the policy service for decisions and read its replies.
  policyEvaluations: { writers: ['agent'], readers: ['policy'] },
  policyEvaluationReplies: { writers: ['policy'], readers: ['agent'] },
  // Where a service's consumer parks records it cannot handle; operators read it as admin.
  deadLetter: { writers: SERVICES, readers: [] },
};

/** Topics outside the catalog, by base name (a namespace prefixes them like catalog topics). */
export const EXTRA_TOPIC_GRANTS: Readonly<Record<string, TopicGrant>> = {
  // The SIEM feed audit-export writes (services/audit-export/src/sinks/kafka-sink.ts) and creates when
  // missing; it reads the feed's end back after a restart or a lost acknowledgement, to send each record once.
  'gatehouse.siem.v1': { writers: ['auditExport'], readers: ['auditExport'], creators: ['auditExport'] },
};

/**
 * Consumer groups and transactional ids are per principal: each role that reads may use the
 * groups, and each role that writes the transactional ids, starting with its own principal and
 * `:` (`ownedIdPrefix`: `agent:replay-<uuid>`, `svc-policy:policy-evaluator-server`), and none
 * other, so no client can join another's group (the policy evaluator's, which an agent could
 * stall) or fence another's transactions. `:` cannot occur in a principal name, so no granted
 * prefix is a prefix of another principal's.
 *
 * The prefixes every reader shared before; provisioning revokes them (see `managedAcl`).
 */
export const LEGACY_GROUP_PREFIXES: readonly string[] = ['gatehouse-replay-', 'gatehouse-tail-', 'gatehouse-policy-'];

/** The transactional-id prefix every writer was granted before (`<principal>-`); revoked the same way. */
function legacyTransactionalIdPrefix(principal: string): string {
  return `${principal}-`;
}

/** The principals to grant to: the defaults, overridden per role. */
export function kafkaPrincipals(overrides: Partial<Record<KafkaRole, string>> = {}): Record<KafkaRole, string> {
  const principals = { ...DEFAULT_KAFKA_PRINCIPALS, ...overrides };
  const seen = new Map<string, KafkaRole>();
  for (const role of KAFKA_ROLES) {
    const name = principals[role];
    if (typeof name !== 'string' || !PRINCIPAL_NAME.test(name)) {
      throw new GatehouseError('KAFKA.CONFIG_INVALID', `the principal of role ${role} must be a user name (letters, digits, . _ -)`, {
        category: 'validation',
        details: { role },
      });
    }
    // Two roles on one principal would share its groups and topics: the agent would be the service.
    const other = seen.get(name);
    if (other !== undefined) {
      throw new GatehouseError('KAFKA.CONFIG_INVALID', `roles ${other} and ${role} must not share a principal`, { category: 'validation', details: { role } });
    }
    seen.set(name, role);
  }
  return principals;
}

/** Reads `GATEHOUSE_KAFKA_ACL_PRINCIPALS` (optional JSON object of role to user name). */
export function kafkaPrincipalsFromEnv(env: NodeJS.ProcessEnv = process.env): Record<KafkaRole, string> {
  const raw = env[KAFKA_ACL_PRINCIPALS_ENV];
  if (raw === undefined || raw.trim() === '') return kafkaPrincipals();
  const fail = () =>
    new GatehouseError('KAFKA.CONFIG_INVALID', `${KAFKA_ACL_PRINCIPALS_ENV} must be a JSON object of role (${KAFKA_ROLES.join(', ')}) to user name`, {
      category: 'validation',
      details: { variable: KAFKA_ACL_PRINCIPALS_ENV },
    });
  let parsed: unknown;
  try {
    parsed = JSON.parse(raw);
  } catch {
    throw fail();
  }
  if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) throw fail();
  for (const key of Object.keys(parsed)) if (!(KAFKA_ROLES as readonly string[]).includes(key)) throw fail();
  return kafkaPrincipals(parsed as Partial<Record<KafkaRole, string>>);
}

const ALLOW = { host: '*', permissionType: AclPermissionTypes.ALLOW };

function entry(principal: string, resourceType: AclResource, resourceName: string, pattern: ResourcePattern, operation: AclOperation): AclEntry {
  return { principal: `User:${principal}`, resourceType, resourceName, resourcePatternType: pattern, operation, ...ALLOW };
}

/** The ACL entries the grants mean for one namespace (deduplicated, in a stable order). */
export function desiredAcls(options: { namespace?: string; principals?: Partial<Record<KafkaRole, string>> } = {}): AclEntry[] {
  const principals = kafkaPrincipals(options.principals);
  const name = (base: string) => (options.namespace ? `${options.namespace}.${base}` : base);
  const out = new Map<string, AclEntry>();
  const add = (e: AclEntry) => out.set(aclKey(e), e);
  const topics: [string, TopicGrant][] = [
    ...(Object.entries(TOPIC_GRANTS) as [TopicId, TopicGrant][]).map(([id, grant]): [string, TopicGrant] => [topicName(id, options.namespace), grant]),
    ...Object.entries(EXTRA_TOPIC_GRANTS).map(([base, grant]): [string, TopicGrant] => [name(base), grant]),
  ];
  const readers = new Set<KafkaRole>();
  const writers = new Set<KafkaRole>();
  for (const [topic, grant] of topics) {
    for (const role of grant.writers) {
      writers.add(role);
      add(entry(principals[role], AclResourceTypes.TOPIC, topic, ResourcePatternTypes.LITERAL, AclOperationTypes.WRITE));
    }
    for (const role of grant.readers) {
      readers.add(role);
      add(entry(principals[role], AclResourceTypes.TOPIC, topic, ResourcePatternTypes.LITERAL, AclOperationTypes.READ));
    }
    for (const role of grant.creators ?? []) {
      add(entry(principals[role], AclResourceTypes.TOPIC, topic, ResourcePatternTypes.LITERAL, AclOperationTypes.CREATE));
    }
    for (const role of grant.configReaders ?? []) {
      add(entry(principals[role], AclResourceTypes.TOPIC, topic, ResourcePatternTypes.LITERAL, AclOperationTypes.DESCRIBE_CONFIGS));
    }
  }
  for (const role of KAFKA_ROLES.filter((r) => readers.has(r))) {
    add(entry(principals[role], AclResourceTypes.GROUP, ownedIdPrefix(principals[role]), ResourcePatternTypes.PREFIXED, AclOperationTypes.READ));
  }
  for (const role of KAFKA_ROLES.filter((r) => writers.has(r))) {
    const prefix = ownedIdPrefix(principals[role]);
    add(entry(principals[role], AclResourceTypes.TRANSACTIONAL_ID, prefix, ResourcePatternTypes.PREFIXED, AclOperationTypes.WRITE));
    add(entry(principals[role], AclResourceTypes.TRANSACTIONAL_ID, prefix, ResourcePatternTypes.PREFIXED, AclOperationTypes.DESCRIBE));
  }
  return [...out.values()];
}

/** A stable identity of an ACL entry, for set comparisons. */
export function aclKey(e: AclEntry): string {
  return [e.principal, e.host, e.permissionType, e.operation, e.resourceType, e.resourcePatternType, e.resourceName].join('|');
}

export interface AclProvisionReport {
  readonly created: number;
  readonly unchanged: number;
  /** Grants the data no longer holds, revoked (see `managedAcl`). */
  readonly removed: number;
  /** True when the cluster has no authorizer (nothing to grant; e.g. a broker without SASL). */
  readonly securityDisabled: boolean;
}

function isSecurityDisabled(error: unknown): boolean {
  const e = error as { type?: string; message?: string } | undefined;
  return e?.type === 'SECURITY_DISABLED' || /security features are disabled/i.test(e?.message ?? '');
}

/** Every ACL on the cluster (the connected principal must be allowed to describe them, e.g. the super user). */
export async function describeAllAcls(admin: ReturnType<Kafka['admin']>): Promise<AclEntry[]> {
  const described = await admin.describeAcls({
    resourceType: AclResourceTypes.ANY,
    resourcePatternType: ResourcePatternTypes.ANY,
    operation: AclOperationTypes.ANY,
    permissionType: AclPermissionTypes.ANY,
  });
  return described.resources.flatMap((r) =>
    r.acls.map((a) => ({ ...a, resourceType: r.resourceType, resourceName: r.resourceName, resourcePatternType: r.resourcePatternType })),
  );
}

/**
 * Whether provisioning owns an ACL for this namespace and these principals: an ALLOW for one of
 * the principals on one of the namespace's topics (`<namespace>.gatehouse.*`, or `gatehouse.*`
 * without a namespace), on its own group and transactional-id prefix (`<principal>:`), or on one
 * an older version granted (the shared `LEGACY_GROUP_PREFIXES`, `<principal>-`, `gatehouse-*`
 * transactional ids), so an upgraded cluster loses those. Anything else — a DENY an operator
 * added, another principal's grant, another namespace's topics — is not provisioning's to remove.
 */
export function managedAcl(e: AclEntry, options: { namespace?: string; principals?: Partial<Record<KafkaRole, string>> } = {}): boolean {
  const principals = new Set(Object.values(kafkaPrincipals(options.principals)).map((p) => `User:${p}`));
  if (!principals.has(e.principal) || e.permissionType !== AclPermissionTypes.ALLOW) return false;
  const own = e.principal.slice('User:'.length);
  switch (e.resourceType) {
    case AclResourceTypes.TOPIC:
      return e.resourcePatternType === ResourcePatternTypes.LITERAL && e.resourceName.startsWith(options.namespace ? `${options.namespace}.gatehouse.` : 'gatehouse.');
    case AclResourceTypes.GROUP:
      return e.resourcePatternType === ResourcePatternTypes.PREFIXED && (LEGACY_GROUP_PREFIXES.includes(e.resourceName) || e.resourceName === ownedIdPrefix(own));
    case AclResourceTypes.TRANSACTIONAL_ID:
      return (
        e.resourcePatternType === ResourcePatternTypes.PREFIXED &&
        (e.resourceName === ownedIdPrefix(own) || e.resourceName === legacyTransactionalIdPrefix(own) || e.resourceName.startsWith('gatehouse-'))
      );
    default:
      return false;
  }
}

/**
 * Makes the cluster hold exactly the ACLs the grants mean for the namespace: creates the missing
 * ones and revokes the managed ones (`managedAcl`) the grants no longer name, so removing a grant
 * from the data takes it away on the next run. Safe to run any number of times; run it as the
 * super user.
 */
export async function provisionAcls(
  kafka: Kafka,
  options: { namespace?: string; principals?: Partial<Record<KafkaRole, string>> } = {},
): Promise<AclProvisionReport> {
  const desired = desiredAcls(options);
  const wanted = new Set(desired.map(aclKey));
  const admin = kafka.admin();
  await admin.connect();
  try {
    let existing: AclEntry[];
    try {
      existing = await describeAllAcls(admin);
    } catch (error) {
      if (isSecurityDisabled(error)) return { created: 0, unchanged: 0, removed: 0, securityDisabled: true };
      throw error;
    }
    const held = new Set(existing.map(aclKey));
    const missing = desired.filter((e) => !held.has(aclKey(e)));
    const stale = existing.filter((e) => managedAcl(e, options) && !wanted.has(aclKey(e)));
    if (missing.length > 0) await admin.createAcls({ acl: missing });
    if (stale.length > 0) {
      await admin.deleteAcls({
        filters: stale.map((e) => ({
          resourceType: e.resourceType,
          resourceName: e.resourceName,
          resourcePatternType: e.resourcePatternType,
          principal: e.principal,
          host: e.host,
          operation: e.operation,
          permissionType: e.permissionType,
        })),
      });
    }
    return { created: missing.length, unchanged: desired.length - missing.length, removed: stale.length, securityDisabled: false };
  } finally {
    await admin.disconnect();
  }
}
