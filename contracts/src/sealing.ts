import { createCipheriv, createDecipheriv, randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { z } from 'zod';
import { canonicalJson } from './json.js';
import { GatehouseError } from './errors.js';

/**
 * Tenants do not read each other. Every agent authenticates to Kafka as a principal that may
 * read the approvals topic, so what a request or a decision says of a call (its arguments, the
 * dry-run preview, the reason, a reviewer's edits and comment) is sealed with the tenant's
 * content key (AES-256-GCM): the tenant's own agents and the approval service hold it, other
 * tenants' agents do not. The authenticated data binds a sealed box to its event type, approval
 * id and tenant, so a box cannot be moved to another request. What folds need to route and
 * decide (scope, requester, deadline, quorum, verdict) stays in clear.
 */

/** A sealed box: which key, the nonce and the ciphertext with its tag (base64url). */
export const SealedSchema = z.strictObject({
  alg: z.literal('A256GCM'),
  keyId: z.string().regex(/^[\w.:-]{1,128}$/),
  iv: z.string().regex(/^[A-Za-z0-9_-]{16}$/, 'must be a base64url 96-bit nonce'),
  data: z.string().regex(/^[A-Za-z0-9_-]+$/).max(200_000),
});
export type Sealed = z.infer<typeof SealedSchema>;

/** One tenant's content key (32 bytes), by id: more than one per tenant is valid during a rotation. */
export interface ContentKey {
  readonly keyId: string;
  readonly tenant: string;
  readonly key: Buffer;
}

/** The content keys a reader or writer holds, by key id. */
export type ContentKeys = ReadonlyMap<string, ContentKey>;

export const ContentKeyEntrySchema = z.strictObject({
  keyId: z.string().regex(/^[\w.:-]{1,128}$/),
  tenant: z.string().min(1).max(256),
  /** base64url of 32 random bytes. */
  key: z.string().regex(/^[A-Za-z0-9_-]{43}$/, 'must be base64url of 32 bytes'),
});
export type ContentKeyEntry = z.infer<typeof ContentKeyEntrySchema>;

function invalid(what: string): GatehouseError {
  return new GatehouseError('SEALING.KEY_INVALID', what, { category: 'validation' });
}

/** Builds content keys from configured entries; a malformed entry is named by index, never by content. */
export function createContentKeys(entries: readonly ContentKeyEntry[]): ContentKeys {
  const keys = new Map<string, ContentKey>();
  entries.forEach((raw, index) => {
    const parsed = ContentKeyEntrySchema.safeParse(raw);
    if (!parsed.success) throw invalid(`content key ${index} is malformed`);
    if (keys.has(parsed.data.keyId)) throw invalid(`content key id ${parsed.data.keyId} is listed twice`);
    keys.set(parsed.data.keyId, Object.freeze({ keyId: parsed.data.keyId, tenant: parsed.data.tenant, key: Buffer.from(parsed.data.key, 'base64url') }));
  });
  return keys;
}

/** Environment variables of content keys: a JSON array of `{ keyId, tenant, key }` (a file wins over the variable). */
export const CONTENT_KEYS_ENV = { keys: 'GATEHOUSE_CONTENT_KEYS', keysFile: 'GATEHOUSE_CONTENT_KEYS_FILE' } as const;

/** Content keys from the environment; none configured is an empty set (requests and decisions travel in clear). */
export function contentKeysFromEnv(env: NodeJS.ProcessEnv = process.env): ContentKeys {
  const file = env[CONTENT_KEYS_ENV.keysFile];
  let raw = env[CONTENT_KEYS_ENV.keys];
  if (file) {
    try {
      raw = readFileSync(file, 'utf8');
    } catch {
      throw new GatehouseError('CONFIG.INVALID', `${CONTENT_KEYS_ENV.keysFile} names a file that cannot be read`, { category: 'validation', details: { variable: CONTENT_KEYS_ENV.keysFile } });
    }
  }
  if (raw === undefined || raw.trim() === '') return new Map();
  let entries: unknown;
  try {
    entries = JSON.parse(raw);
  } catch {
    entries = undefined;
  }
  if (!Array.isArray(entries)) throw new GatehouseError('CONFIG.INVALID', `${CONTENT_KEYS_ENV.keys} must be a JSON array of { keyId, tenant, key }`, { category: 'validation', details: { variable: CONTENT_KEYS_ENV.keys } });
  return createContentKeys(entries as ContentKeyEntry[]);
}

/** The key a writer seals a tenant's content with: the last one configured for it (the newest in a rotation). */
export function sealingKeyFor(keys: ContentKeys | undefined, tenant: string): ContentKey | undefined {
  if (!keys) return undefined;
  // Indexed once per key set: a fold asks this for every request, whatever the number of tenants.
  let byTenant = newestByTenant.get(keys);
  if (!byTenant) {
    byTenant = new Map();
    for (const key of keys.values()) byTenant.set(key.tenant, key);
    newestByTenant.set(keys, byTenant);
  }
  return byTenant.get(tenant);
}

const newestByTenant = new WeakMap<ContentKeys, Map<string, ContentKey>>();

/** What a sealed box is bound to: its event type, approval id and tenant. */
export interface SealBinding {
  readonly type: string;
  readonly approvalId: string;
  readonly tenant: string;
}

const aad = (binding: SealBinding) => Buffer.from(JSON.stringify(['gatehouse.sealed.v1', binding.type, binding.approvalId, binding.tenant]), 'utf8');

/** Seals `value` (JSON) with `key`, bound to `binding`. */
export function sealContent(value: unknown, key: ContentKey, binding: SealBinding): Sealed {
  const iv = randomBytes(12);
  const cipher = createCipheriv('aes-256-gcm', key.key, iv);
  cipher.setAAD(aad(binding));
  const data = Buffer.concat([cipher.update(canonicalJson(value), 'utf8'), cipher.final(), cipher.getAuthTag()]);
  return { alg: 'A256GCM', keyId: key.keyId, iv: iv.toString('base64url'), data: data.toString('base64url') };
}

/** Why a sealed box does not open: the reader holds no such key (another tenant's), or it was altered or moved. */
export type OpenFailure = 'no-key' | 'wrong-tenant' | 'tampered';

/** Opens a sealed box with the reader's keys: the JSON value, or why not. Pure given the keys. */
export function openContent(sealed: Sealed, keys: ContentKeys | undefined, binding: SealBinding): { readonly ok: true; readonly value: unknown } | { readonly ok: false; readonly reason: OpenFailure } {
  const key = keys?.get(sealed.keyId);
  if (!key) return { ok: false, reason: 'no-key' };
  if (key.tenant !== binding.tenant) return { ok: false, reason: 'wrong-tenant' };
  try {
    const data = Buffer.from(sealed.data, 'base64url');
    if (data.length < 17) return { ok: false, reason: 'tampered' };
    const decipher = createDecipheriv('aes-256-gcm', key.key, Buffer.from(sealed.iv, 'base64url'));
    decipher.setAAD(aad(binding));
    decipher.setAuthTag(data.subarray(data.length - 16));
    const plain = Buffer.concat([decipher.update(data.subarray(0, data.length - 16)), decipher.final()]).toString('utf8');
    return { ok: true, value: JSON.parse(plain) as unknown };
  } catch {
    return { ok: false, reason: 'tampered' };
  }
}

/** A fresh content key entry for `tenant` (what a provisioning script writes; never printed). */
export function newContentKeyEntry(tenant: string, keyId = `content-${tenant}-${randomBytes(4).toString('hex')}`): ContentKeyEntry {
  return { keyId, tenant, key: randomBytes(32).toString('base64url') };
}
