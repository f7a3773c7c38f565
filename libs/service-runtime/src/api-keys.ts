import { createHash, timingSafeEqual } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { GatehouseError } from '@gatehouse/contracts';
import { z } from 'zod';

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

/** The configured form of an API key: its hex sha-256 (the key itself is never configured). */
export const ApiKeySha256 = z.string().regex(/^[0-9a-f]{64}$/, 'must be the hex sha-256 of the API key');

function invalidConfig(variable: string, expectation: string): GatehouseError {
  return new GatehouseError('CONFIG.INVALID', `${variable} ${expectation}`, { category: 'validation', details: { variable } });
}

/**
 * A JSON list of principals (`what`: "operator", "reviewer") from configuration, each item
 * checked against `item`; empty or absent: none. A bad list or item is CONFIG.INVALID naming the
 * variable and the first bad field, never a value.
 */
export function parsePrincipalList<S extends z.ZodType>(json: string | undefined, variable: string, what: string, item: S): z.infer<S>[] {
  if (json === undefined || json.trim() === '') return [];
  let raw: unknown;
  try {
    raw = JSON.parse(json);
  } catch {
    throw invalidConfig(variable, `must be a JSON array of ${what}s`);
  }
  const parsed = z.array(item).safeParse(raw);
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    throw invalidConfig(variable, `has an invalid ${what} field "${issue?.path.map(String).join('.') ?? ''}": ${issue?.message ?? 'invalid'}`);
  }
  return parsed.data;
}

/** The list's text: the file `fileVariable` names (a mounted secret), else the variable `variable` itself. */
export function principalListText(env: NodeJS.ProcessEnv, variable: string, fileVariable: string): { readonly text: string | undefined; readonly from: string } {
  const file = env[fileVariable];
  if (!file) return { text: env[variable], from: variable };
  try {
    return { text: readFileSync(file, 'utf8'), from: fileVariable };
  } catch {
    throw invalidConfig(fileVariable, 'names a file that cannot be read');
  }
}
