import { createHash, createPrivateKey, createPublicKey, type KeyObject, randomUUID, sign, verify } from 'node:crypto';
import { z } from 'zod';
import { canonicalJson } from './json.js';
import { GatehouseError } from './errors.js';
import { type ContentKeys } from './sealing.js';

/**
 * Who may grant. Events that grant something (an approval decided or expired, a ledger outcome,
 * a policy bundle) are written only by the service that owns them and carry its Ed25519
 * signature; every fold checks it against configured public keys before the event counts.
 */
export const SignerSchema = z.enum(['approval', 'ledger', 'policy']);
export type Signer = z.infer<typeof SignerSchema>;

/**
 * Who holds a trusted key: a granting service, or an agent. An agent key signs the agent's
 * claims (requests, cancellations: see `claims.ts`) and is bound to the agent's id and tenants;
 * it can never grant, since every granting type needs a service signer.
 */
export const KeyHolderSchema = z.enum(['approval', 'ledger', 'policy', 'agent']);
export type KeyHolder = z.infer<typeof KeyHolderSchema>;

/** What an agent key is bound to: the agent's id (a claim's requester) and the tenants it may claim for. */
export const AgentBindingSchema = z.strictObject({
  id: z.string().min(1).max(256),
  tenants: z.array(z.string().min(1).max(256)).min(1).max(100),
});
export interface AgentBinding {
  readonly id: string;
  readonly tenants: readonly string[];
}

/** An event's signature: the key that made it and the Ed25519 signature (base64url) over `signedBytes`. */
export const EventSignatureSchema = z.object({
  keyId: z.string().min(1).max(128),
  alg: z.literal('Ed25519'),
  value: z.string().regex(/^[A-Za-z0-9_-]{86}$/, 'must be a base64url Ed25519 signature'),
});
export type EventSignature = z.infer<typeof EventSignatureSchema>;

/** The signer each granting event type needs; event types not listed grant nothing and need no signature. */
export const GRANT_SIGNERS: Readonly<Record<string, Signer>> = Object.freeze({
  ApprovalDecided: 'approval',
  ApprovalExpired: 'approval',
  LedgerKeyReserved: 'ledger',
  LedgerKeyCompleted: 'ledger',
  LedgerKeyFailed: 'ledger',
  LedgerKeyTakenOver: 'ledger',
  LedgerKeyReconciled: 'ledger',
  LedgerKeyResolved: 'ledger',
  // An expiry frees a completed key (the next call runs again): only the ledger service may say so.
  LedgerKeyExpired: 'ledger',
  LedgerRateConsumed: 'ledger',
  // A checkpoint is what a start over a truncated log takes the ledger's state from.
  LedgerCheckpoint: 'ledger',
  PolicyBundlePublished: 'policy',
});

/** The bytes a signature covers: the canonical JSON of the whole event except its signature. */
export function signedBytes(event: object): Buffer {
  const { signature: _signature, ...rest } = event as { signature?: unknown };
  return Buffer.from(canonicalJson(rest), 'utf8');
}

/** A service's private signing key and the id verifiers know its public key by. */
export interface SigningKey {
  readonly keyId: string;
  readonly signer: Signer;
  readonly privateKey: KeyObject;
}

/** An agent's private claim key, with what it is bound to (see `claims.ts`). */
export interface AgentKey {
  readonly keyId: string;
  readonly signer: 'agent';
  readonly agent: AgentBinding;
  readonly privateKey: KeyObject;
}

function invalidKey(what: string): GatehouseError {
  return new GatehouseError('SIGNING.KEY_INVALID', what, { category: 'validation' });
}

/** Reads a PKCS#8 PEM Ed25519 private key; the key material never appears in an error. */
export function signingKeyFromPem(keyId: string, signer: Signer, pem: string): SigningKey {
  let privateKey: KeyObject;
  try {
    privateKey = createPrivateKey(pem);
  } catch {
    throw invalidKey('the signing key is not a PEM private key');
  }
  if (privateKey.asymmetricKeyType !== 'ed25519') throw invalidKey('the signing key must be an Ed25519 key');
  if (!/^[\w.:-]{1,128}$/.test(keyId)) throw invalidKey('a key id is 1-128 letters, digits, . _ : -');
  return Object.freeze({ keyId, signer, privateKey });
}

/**
 * The key id a public key goes by when none is configured: `<signer>-` and the first 16 hex of
 * the sha-256 of its SPKI DER. Deterministic, so a deployment needs only the key files.
 */
export function keyIdOf(signer: KeyHolder, publicKey: KeyObject): string {
  return `${signer}-${createHash('sha256').update(publicKey.export({ type: 'spki', format: 'der' })).digest('hex').slice(0, 16)}`;
}

/** Returns `event` with its signature: what a granting service appends. */
export function signEvent<E extends object>(event: E, key: SigningKey | AgentKey): E & { signature: EventSignature } {
  const value = sign(null, signedBytes(event), key.privateKey).toString('base64url');
  return { ...event, signature: { keyId: key.keyId, alg: 'Ed25519', value } };
}

/** One public key a verifier trusts, for one signer. */
export interface TrustedKey {
  readonly keyId: string;
  readonly signer: KeyHolder;
  readonly publicKey: KeyObject;
  /** Present exactly for agent keys. */
  readonly agent?: AgentBinding;
}

/** The public keys a fold trusts, by key id. More than one per signer is valid during a rotation. */
export interface Keyring {
  readonly keys: ReadonlyMap<string, TrustedKey>;
  /** The tenants' content keys the holder may open and seal with (`sealing.ts`); absent: none. */
  readonly content?: ContentKeys;
}

export const TrustedKeyEntrySchema = z
  .strictObject({
    keyId: z.string().regex(/^[\w.:-]{1,128}$/),
    signer: KeyHolderSchema,
    /** SPKI PEM of the Ed25519 public key. */
    publicKey: z.string().min(1),
    /** Required for (and only for) an agent key: the agent id and tenants its claims may name. */
    agent: AgentBindingSchema.optional(),
  })
  .refine((e) => (e.signer === 'agent') === (e.agent !== undefined), { message: 'agent is required for agent keys and forbidden otherwise' });
export type TrustedKeyEntry = z.infer<typeof TrustedKeyEntrySchema>;

/** Builds a keyring from configured entries; a malformed entry is a typed error naming its index. */
export function createKeyring(entries: readonly TrustedKeyEntry[], content?: ContentKeys): Keyring {
  const keys = new Map<string, TrustedKey>();
  entries.forEach((raw, index) => {
    const parsed = TrustedKeyEntrySchema.safeParse(raw);
    if (!parsed.success) throw invalidKey(`trusted key ${index} is malformed`);
    const entry = parsed.data;
    let publicKey: KeyObject;
    try {
      publicKey = createPublicKey(entry.publicKey);
    } catch {
      throw invalidKey(`trusted key ${index} is not a PEM public key`);
    }
    if (publicKey.asymmetricKeyType !== 'ed25519') throw invalidKey(`trusted key ${index} is not an Ed25519 key`);
    if (keys.has(entry.keyId)) throw invalidKey(`trusted key id ${entry.keyId} is listed twice`);
    const agent = entry.agent && Object.freeze({ id: entry.agent.id, tenants: Object.freeze([...entry.agent.tenants]) });
    keys.set(entry.keyId, Object.freeze({ keyId: entry.keyId, signer: entry.signer, publicKey, ...(agent && { agent }) }));
  });
  return Object.freeze({ keys, ...(content && content.size > 0 && { content }) });
}

/** `keyring` holding `content` as its content keys (what `keyringFromEnv` does from the environment). */
export function withContentKeys(keyring: Keyring, content: ContentKeys): Keyring {
  return Object.freeze({ keys: keyring.keys, ...(content.size > 0 && { content }) });
}

/** The public half of a signing key, as a keyring entry (what a service publishes for its verifiers). */
export function trustedEntryOf(key: SigningKey | AgentKey): TrustedKeyEntry {
  const publicKey = createPublicKey(key.privateKey).export({ type: 'spki', format: 'pem' }).toString();
  return { keyId: key.keyId, signer: key.signer, publicKey, ...(key.signer === 'agent' && { agent: { id: key.agent.id, tenants: [...key.agent.tenants] } }) };
}

/** Why a granting event does not count. */
export type UntrustedReason = 'unsigned' | 'malformed-signature' | 'unknown-key' | 'wrong-signer' | 'bad-signature';

export type GrantCheck =
  | { readonly trusted: true; readonly keyId?: string }
  | { readonly trusted: false; readonly reason: UntrustedReason; readonly signer: Signer; readonly keyId?: string };

// The fold checks a record, then its reader asks again to report it: one Ed25519 verification
// per record and keyring is enough. Records are not mutated after decoding.
const checked = new WeakMap<object, WeakMap<Keyring, GrantCheck>>();

/**
 * Whether `event` may count: events that grant nothing always may; a granting event must carry
 * a valid signature by a trusted key of the signer its type needs. Pure: a function of the event
 * and the keyring only, so every fold with the same keys agrees (answers are cached per event
 * object and keyring).
 */
export function checkGrant(event: { type: string; signature?: unknown }, keyring: Keyring): GrantCheck {
  const known = checked.get(event)?.get(keyring);
  if (known) return known;
  const answer = verifyGrant(event, keyring);
  let byKeyring = checked.get(event);
  if (!byKeyring) checked.set(event, (byKeyring = new WeakMap()));
  byKeyring.set(keyring, answer);
  return answer;
}

/**
 * The trusted key an event's signature names, and a check of the signature by it (run only when
 * the caller asks, after its own rules on the key): the first steps of every signature check.
 */
export function signingKeyOf(
  event: { signature?: unknown },
  keyring: Keyring,
): { readonly found: true; readonly key: TrustedKey; readonly verifies: () => boolean } | { readonly found: false; readonly reason: 'unsigned' | 'malformed-signature' | 'unknown-key'; readonly keyId?: string } {
  if (event.signature === undefined) return { found: false, reason: 'unsigned' };
  const signature = EventSignatureSchema.safeParse(event.signature);
  if (!signature.success) return { found: false, reason: 'malformed-signature' };
  const { keyId, value } = signature.data;
  const key = keyring.keys.get(keyId);
  if (!key) return { found: false, reason: 'unknown-key', keyId };
  return { found: true, key, verifies: () => verify(null, signedBytes(event), key.publicKey, Buffer.from(value, 'base64url')) };
}

function verifyGrant(event: { type: string; signature?: unknown }, keyring: Keyring): GrantCheck {
  const signer = GRANT_SIGNERS[event.type];
  if (signer === undefined) return { trusted: true };
  const signed = signingKeyOf(event, keyring);
  if (!signed.found) return { trusted: false, reason: signed.reason, signer, ...(signed.keyId !== undefined && { keyId: signed.keyId }) };
  const keyId = signed.key.keyId;
  if (signed.key.signer !== signer) return { trusted: false, reason: 'wrong-signer', signer, keyId };
  return signed.verifies() ? { trusted: true, keyId } : { trusted: false, reason: 'bad-signature', signer, keyId };
}

/** Where an ignored grant was read: what a security event points at. */
export interface GrantPosition {
  readonly topic: string;
  readonly partition: number;
  readonly offset: string;
}

/**
 * The security event a reader appends to the audit topic when its fold ignored a granting event
 * for its signature: which event, where, why. Carries no payload of the forged event.
 */
export function untrustedGrantDecision(
  reader: { readonly source: string },
  forged: { readonly id: string; readonly type: string; readonly tenant: string; readonly subject: string; readonly correlationId?: string },
  check: Extract<GrantCheck, { trusted: false }>,
  at: GrantPosition,
): DecisionRecordedInput {
  const boundary = check.signer === 'approval' ? 'approval' : check.signer;
  return {
    meta: { source: reader.source, tenant: forged.tenant, subject: forged.subject, ...(forged.correlationId !== undefined && { correlationId: forged.correlationId }) },
    payload: {
      decisionId: randomUUID(),
      boundary,
      outcome: 'denied',
      code: 'SECURITY.UNTRUSTED_GRANT',
      reason: `a ${forged.type} event without a valid ${check.signer} service signature was ignored`,
      redactedPaths: [],
      attributes: {
        eventId: forged.id,
        eventType: forged.type,
        untrusted: check.reason,
        ...(check.keyId !== undefined && { keyId: check.keyId }),
        topic: at.topic,
        partition: at.partition,
        offset: at.offset,
      },
    },
  };
}

/** What `createEvent(DecisionRecordedV1, meta, payload)` takes. */
export interface DecisionRecordedInput {
  readonly meta: { source: string; tenant: string; subject: string; correlationId?: string };
  readonly payload: {
    decisionId: string;
    boundary: 'approval' | 'ledger' | 'policy';
    outcome: 'denied';
    code: string;
    reason: string;
    redactedPaths: string[];
    attributes: Record<string, string | number>;
  };
}
