import { Logger } from '@nestjs/common';
import { type Allowed, allowed, type ApiKeyPrincipal, ApiKeySha256, bearerCredential, findByApiKey, parsePrincipalList } from '@gatehouse/service-runtime';
import { z } from 'zod';
import { AuditError } from '../errors.js';

/**
 * Someone who may read the query API (a SIEM integration, an investigator): the decisions of
 * `tenants` only. Only the API key's sha-256 is configured.
 */
export interface AuditReader extends ApiKeyPrincipal {
  readonly tenants: Allowed;
}

const ReaderSchema = z.strictObject({
  id: z.string().min(1).max(256),
  role: z.string().min(1).max(128),
  apiKeySha256: ApiKeySha256,
  tenants: z.union([z.literal('*'), z.array(z.string().min(1).max(256)).min(1)]),
});

/** Parses `[{ id, role, apiKeySha256, tenants }]` (`tenants`: a list or `*`); a bad entry is CONFIG.INVALID naming the field, never a key. */
export function parseAuditReaders(json: string | undefined, variable: string): AuditReader[] {
  return parsePrincipalList(json, variable, 'reader', ReaderSchema).map((r) => ({ id: r.id, role: r.role, tenants: allowed(r.tenants), keyDigest: Buffer.from(r.apiKeySha256, 'hex') }));
}

/** The principal of `Authorization: Bearer <key>` among `principals`; AUDIT.UNAUTHENTICATED (401) otherwise. */
export function authenticate<P extends ApiKeyPrincipal>(authorization: string | undefined, principals: readonly P[]): P {
  const credential = bearerCredential(authorization);
  const found = credential === undefined ? undefined : findByApiKey(credential, principals);
  if (!found) throw new AuditError('AUDIT.UNAUTHENTICATED');
  return found;
}

const log = new Logger('audit-export');

/**
 * One line per answered read, for whoever audits the auditors: the reader's id, the route and how
 * many decisions it returned; never a filter value or a key.
 */
export function logRead(reader: AuditReader, route: 'decisions' | 'decision' | 'timeline', returned: number): void {
  log.log(`audit read {"reader":${JSON.stringify(reader.id)},"route":"${route}","returned":${returned}}`);
}

/** The tenants a query may see, as SQL takes them: every one, or a list. */
export type TenantScope = '*' | readonly string[];

export const tenantScope = (reader: AuditReader): TenantScope => (reader.tenants === '*' ? '*' : [...reader.tenants]);

/** The SQL condition that keeps rows of `scope` only; `p` is the placeholder bound to `scopeParameter(scope)`. */
export const tenantCondition = (p: string): string => `(${p}::text[] IS NULL OR tenant = ANY(${p}::text[]))`;

export const scopeParameter = (scope: TenantScope): string[] | null => (scope === '*' ? null : [...scope]);

/** Whether `scope` admits `tenant`. */
export const inScope = (scope: TenantScope, tenant: string): boolean => scope === '*' || scope.includes(tenant);
