import { createHash, randomUUID } from 'node:crypto';

/**
 * A reader of `tenants` (default every tenant) for the audit-export query API, with a fresh key: `env` configures the
 * service with it (only the key's digest), `headers` is what the reader sends.
 */
export function auditReader(tenants: '*' | readonly string[] = '*', id = 'test:siem'): { readonly env: Record<string, string>; readonly headers: { readonly authorization: string } } {
  const key = `rk_${randomUUID()}`;
  const apiKeySha256 = createHash('sha256').update(key).digest('hex');
  return { env: { GATEHOUSE_AUDIT_READERS: JSON.stringify([{ id, role: 'siem', tenants, apiKeySha256 }]) }, headers: { authorization: `Bearer ${key}` } };
}
