import { randomUUID } from 'node:crypto';
import { GatehouseError } from '@gatehouse/contracts';
import { type Kafka } from 'kafkajs';
import { KAFKA_USERNAME_ENV, type KafkaConnectionConfig } from './config.js';

/**
 * Consumer groups and transactional ids belong to one Kafka principal each: every one starts
 * with the principal's user name and `:` (`svc-policy:policy-evaluator-server`,
 * `agent:replay-<uuid>`), and the ACLs (`acls.ts`) grant each principal only its own prefix. A
 * shared prefix let any reader join any group — the policy service's evaluator group among
 * them, which stalled every Kafka evaluation — and fence another principal's transactions.
 *
 * `:` cannot occur in a principal name (`PRINCIPAL_NAME`), so no principal's prefix is a
 * prefix of another's: `agent:` is not a prefix of `agent-acme:...` the way `agent-` is.
 */
export const OWNED_ID_SEPARATOR = ':';

/** What a principal (SCRAM user) name may be: letters, digits, `.`, `_`, `-` — never the separator. */
export const PRINCIPAL_NAME = /^[A-Za-z0-9._-]{1,128}$/;

/**
 * The principal the broker assigns a client that connects without SASL. Groups of such a client
 * are `ANONYMOUS:...`: on a broker without an authorizer they simply work; on one with an
 * authorizer provisioning never grants `User:ANONYMOUS` anything, so they are refused.
 */
export const ANONYMOUS_PRINCIPAL = 'ANONYMOUS';

/** What comes after the prefix: a purpose, optionally with a namespace or a uuid. */
const PURPOSE = /^[A-Za-z0-9._-]{1,200}$/;

// A property of the client rather than a WeakMap entry, so that a wrapper (a Proxy) still has it.
const PRINCIPAL = Symbol('gatehouse.kafka.principal');

function invalid(message: string, details: Record<string, string>): GatehouseError {
  return new GatehouseError('KAFKA.CONFIG_INVALID', message, { category: 'validation', details });
}

/** Remembers which principal a client authenticates as (`createKafkaClient` calls it). */
export function rememberClientPrincipal(kafka: Kafka, config: KafkaConnectionConfig): void {
  Object.defineProperty(kafka, PRINCIPAL, { value: connectionPrincipal(config), enumerable: false });
}

/** The principal the broker sees for a connection: its SASL user name, or `ANONYMOUS` without SASL. */
export function connectionPrincipal(config: Pick<KafkaConnectionConfig, 'sasl'>): string {
  return config.sasl?.username ?? ANONYMOUS_PRINCIPAL;
}

/** The principal of a client built by `createKafkaClient`; any other client is refused (its principal is unknown). */
export function clientPrincipal(kafka: Kafka): string {
  const principal = (kafka as unknown as { [PRINCIPAL]?: string })[PRINCIPAL];
  if (typeof principal !== 'string') throw invalid('the Kafka client was not built by createKafkaClient: its principal is unknown', {});
  return principal;
}

/** `<principal>:`, the prefix of every group and transactional id `principal` owns (and the ACLs grant it). */
export function ownedIdPrefix(principal: string): string {
  if (!PRINCIPAL_NAME.test(principal)) {
    // The name is configuration, not a secret, but it may be long or odd: name the variable, not the value.
    throw invalid(`${KAFKA_USERNAME_ENV} must be a principal name (letters, digits, . _ -) to own consumer groups and transactional ids`, { variable: KAFKA_USERNAME_ENV });
  }
  return `${principal}${OWNED_ID_SEPARATOR}`;
}

/** Who owns an id: a principal name, a connection's configuration, or a client built by `createKafkaClient`. */
export type IdOwner = string | Pick<KafkaConnectionConfig, 'sasl' | 'brokers'> | Kafka;

function ownerPrincipal(owner: IdOwner): string {
  if (typeof owner === 'string') return owner;
  if ('consumer' in owner) return clientPrincipal(owner);
  return connectionPrincipal(owner);
}

function ownedId(owner: IdOwner, purpose: string): string {
  if (!PURPOSE.test(purpose)) throw invalid('a consumer group or transactional id purpose must be 1-200 letters, digits, . _ -', {});
  return `${ownedIdPrefix(ownerPrincipal(owner))}${purpose}`;
}

/** The one way a gatehouse client names a consumer group: `<principal>:<purpose>`. */
export function kafkaGroupId(owner: IdOwner, purpose: string): string {
  return ownedId(owner, purpose);
}

/** A group of its own for one replay or tail, never committed to (kafkajs has no manual assignment). */
export function throwawayGroupId(owner: IdOwner, kind: 'replay' | 'tail'): string {
  return kafkaGroupId(owner, `${kind}-${randomUUID()}`);
}

/** The one way a gatehouse client names a transactional id: `<principal>:<purpose>`. */
export function kafkaTransactionalId(owner: IdOwner, purpose: string): string {
  return ownedId(owner, purpose);
}

/** Whether `id` is one of `owner`'s groups or transactional ids. */
export function ownsId(owner: IdOwner, id: string): boolean {
  const prefix = ownedIdPrefix(ownerPrincipal(owner));
  return id.startsWith(prefix) && PURPOSE.test(id.slice(prefix.length));
}
