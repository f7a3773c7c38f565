import { createPrivateKey, type KeyObject, randomUUID } from 'node:crypto';
import { GatehouseError } from './errors.js';
import {
  type AgentBinding,
  AgentBindingSchema,
  type AgentKey,
  type DecisionRecordedInput,
  type EventSignature,
  type GrantPosition,
  type Keyring,
  signEvent,
  signingKeyOf,
} from './signing.js';

/**
 * Everything an agent writes is a claim by an authenticated principal, never a fact. A claim is
 * an event signed with the agent's own Ed25519 key, which the keyring binds to the agent's id
 * and tenants; a fold checks the author may make the claim (its tenant, its own request) before
 * it counts. The approval service may sign the same claims (a cancellation on a run's behalf).
 * Kafka cannot tell a consumer who produced a record, so the signature is what carries the
 * author across the log.
 */

/** Who made a claim, as its signature proves. */
export type ClaimAuthor =
  | { readonly kind: 'agent'; readonly agentId: string; readonly keyId: string }
  | { readonly kind: 'service'; readonly signer: 'approval'; readonly keyId: string };

/** Why a claim has no author a fold may count. */
export type UnattributedReason = 'unsigned' | 'malformed-signature' | 'unknown-key' | 'bad-signature' | 'wrong-signer' | 'foreign-tenant';

export type ClaimCheck = { readonly attributed: true; readonly author: ClaimAuthor } | { readonly attributed: false; readonly reason: UnattributedReason };

const cache = new WeakMap<object, WeakMap<Keyring, ClaimCheck>>();

/**
 * Who signed `event`, if a key the keyring trusts did: an agent key bound to the event's tenant,
 * or the approval service's key. Pure (a function of the event and the keyring; cached per
 * event object and keyring), so every fold with the same keys agrees.
 */
export function checkClaim(event: { tenant: string; signature?: unknown }, keyring: Keyring): ClaimCheck {
  const known = cache.get(event)?.get(keyring);
  if (known) return known;
  const answer = verifyClaim(event, keyring);
  let byKeyring = cache.get(event);
  if (!byKeyring) cache.set(event, (byKeyring = new WeakMap()));
  byKeyring.set(keyring, answer);
  return answer;
}

function verifyClaim(event: { tenant: string; signature?: unknown }, keyring: Keyring): ClaimCheck {
  const signed = signingKeyOf(event, keyring);
  if (!signed.found) return { attributed: false, reason: signed.reason };
  const key = signed.key;
  if (key.signer !== 'agent' && key.signer !== 'approval') return { attributed: false, reason: 'wrong-signer' };
  if (!signed.verifies()) return { attributed: false, reason: 'bad-signature' };
  if (key.signer === 'approval') return { attributed: true, author: { kind: 'service', signer: 'approval', keyId: key.keyId } };
  // A key bound to tenant A signs nothing that counts in tenant B.
  if (!key.agent || !key.agent.tenants.includes(event.tenant)) return { attributed: false, reason: 'foreign-tenant' };
  return { attributed: true, author: { kind: 'agent', agentId: key.agent.id, keyId: key.keyId } };
}

/** Returns `event` signed as the agent's claim. */
export function signClaim<E extends object>(event: E, key: AgentKey): E & { signature: EventSignature } {
  return signEvent(event, key);
}

function invalidKey(what: string): GatehouseError {
  return new GatehouseError('SIGNING.KEY_INVALID', what, { category: 'validation' });
}

/** Reads an agent's PKCS#8 PEM Ed25519 private key and its binding; the key material never appears in an error. */
export function agentKeyFromPem(keyId: string, agent: AgentBinding, pem: string): AgentKey {
  let privateKey: KeyObject;
  try {
    privateKey = createPrivateKey(pem);
  } catch {
    throw invalidKey('the agent key is not a PEM private key');
  }
  if (privateKey.asymmetricKeyType !== 'ed25519') throw invalidKey('the agent key must be an Ed25519 key');
  if (!/^[\w.:-]{1,128}$/.test(keyId)) throw invalidKey('a key id is 1-128 letters, digits, . _ : -');
  const binding = AgentBindingSchema.safeParse(agent);
  if (!binding.success) throw invalidKey('an agent key is bound to an id (1-256 characters) and 1-100 tenants');
  return Object.freeze({ keyId, signer: 'agent', agent: Object.freeze({ id: binding.data.id, tenants: Object.freeze([...binding.data.tenants]) }), privateKey });
}

/** Whether the agent key may claim for `tenant`. */
export function agentMayClaimFor(key: AgentKey, tenant: string): boolean {
  return key.agent.tenants.includes(tenant);
}

/**
 * The security event a reader appends when its fold ignored a claim its author may not make
 * (unsigned, another tenant's, another requester's): which event, where, why. Carries nothing
 * of the claim's payload.
 */
export function forbiddenClaimDecision(
  reader: { readonly source: string },
  claim: { readonly id: string; readonly type: string; readonly tenant: string; readonly subject: string; readonly correlationId?: string },
  why: string,
  at: GrantPosition,
): DecisionRecordedInput {
  return {
    meta: { source: reader.source, tenant: claim.tenant, subject: claim.subject, ...(claim.correlationId !== undefined && { correlationId: claim.correlationId }) },
    payload: {
      decisionId: randomUUID(),
      boundary: 'approval',
      outcome: 'denied',
      code: 'SECURITY.FORBIDDEN_CLAIM',
      reason: `a ${claim.type} claim its author may not make was ignored`,
      redactedPaths: [],
      attributes: { eventId: claim.id, eventType: claim.type, claim: why, topic: at.topic, partition: at.partition, offset: at.offset },
    },
  };
}
