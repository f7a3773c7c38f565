import { createHash, timingSafeEqual } from 'node:crypto';

/** Someone who authenticates with an API key; only the key's sha-256 is configured or kept. */
export interface ApiKeyPrincipal {
  readonly id: string;
  readonly role: string;
  readonly keyDigest: Buffer;
}

/** The digest an API key is configured and compared by. */
export function apiKeyDigest(key: string): Buffer {
  return createHash('sha256').update(key, 'utf8').digest();
}

/** The credential of `Authorization: Bearer <credential>` (16 to 4,096 visible ASCII characters), or undefined. */
export function bearerCredential(authorization: string | undefined): string | undefined {
  return /^Bearer ([\x21-\x7e]{16,4096})$/i.exec(authorization ?? '')?.[1];
}

/** The principal whose key is `credential`: digests compared in constant time against every entry. */
export function findByApiKey<P extends ApiKeyPrincipal>(credential: string, principals: readonly P[]): P | undefined {
  const presented = apiKeyDigest(credential);
  let found: P | undefined;
  for (const principal of principals) {
    if (timingSafeEqual(presented, principal.keyDigest) && found === undefined) found = principal;
  }
  return found;
}

/** Names a principal may act on (tenants, connectors, policy sets): a set, or every one. */
export type Allowed = '*' | ReadonlySet<string>;

export const allowed = (scope: '*' | readonly string[]): Allowed => (scope === '*' ? '*' : new Set(scope));

/** Whether `allowedSet` admits `value`. */
export function admits(allowedSet: Allowed, value: string): boolean {
  return allowedSet === '*' || allowedSet.has(value);
}
