import { GatehouseError } from '@gatehouse/contracts';
import { type ApiKeyPrincipal, ApiKeySha256, bearerCredential, findByApiKey, parsePrincipalList } from '@gatehouse/service-runtime';
import { z } from 'zod';
import { LedgerError } from '../errors.js';

/**
 * An agent process that may use the ledger: its keys and budgets in `tenants` only. Only the API
 * key's sha-256 is configured; the key itself lives with the agent.
 */
export interface LedgerAgent extends ApiKeyPrincipal {
  readonly tenants: ReadonlySet<string>;
}

/** Who is asking and for which tenant: every key and budget an agent route touches is scoped by it. */
export interface Caller {
  /** The authenticated agent's id: recorded on the claims it makes, and what the bounds count. */
  readonly principal: string;
  readonly tenant: string;
}

/** A tenant as the envelope takes it. */
export const TenantName = z.string().min(1, 'must not be empty').max(256, 'must be at most 256 characters');

// No `*`: an agent acts for the tenants it is bound to, listed; a key for every tenant is an operator's.
const AgentSchema = z.strictObject({ id: z.string().min(1).max(256), apiKeySha256: ApiKeySha256, tenants: z.array(TenantName).min(1).max(10_000) });

/**
 * Parses `[{ id, apiKeySha256, tenants: [...] }]` (GATEHOUSE_LEDGER_AGENTS); a bad entry is
 * CONFIG.INVALID naming the field, never a key. An id or key listed twice is refused: each
 * credential names exactly one agent.
 */
export function parseLedgerAgents(json: string | undefined, variable: string): LedgerAgent[] {
  const agents = parsePrincipalList(json, variable, 'agent', AgentSchema);
  const ids = new Set<string>();
  const digests = new Set<string>();
  return agents.map((agent, index) => {
    if (ids.has(agent.id) || digests.has(agent.apiKeySha256)) {
      throw new GatehouseError('CONFIG.INVALID', `${variable} lists agent ${index + 1}'s id or key twice`, { category: 'validation', details: { variable } });
    }
    ids.add(agent.id);
    digests.add(agent.apiKeySha256);
    return { id: agent.id, role: 'agent', tenants: new Set(agent.tenants), keyDigest: Buffer.from(agent.apiKeySha256, 'hex') };
  });
}

/**
 * The agent of `Authorization: Bearer <key>`: digests compared in constant time against every
 * configured agent. LEDGER.UNAUTHENTICATED (401) without a key, with an unknown one, or when no
 * agent is configured.
 */
export function authenticateAgent(authorization: string | undefined, agents: readonly LedgerAgent[]): LedgerAgent {
  const credential = bearerCredential(authorization);
  const found = credential === undefined ? undefined : findByApiKey(credential, agents);
  if (!found) throw new LedgerError('LEDGER.UNAUTHENTICATED');
  return found;
}

/**
 * The scope a request acts in: the tenant it names, when the agent is bound to it (LEDGER.FORBIDDEN
 * otherwise, 403); a request that names none acts for the agent's only tenant, and one of an agent
 * bound to several must name it (LEDGER.INVALID_REQUEST). The tenant is never taken on the body's
 * word alone: it only selects among the tenants the credential carries.
 */
export function callerFor(agent: LedgerAgent, tenant: string | undefined): Caller {
  if (tenant === undefined) {
    const [only, ...others] = agent.tenants;
    if (only === undefined || others.length > 0) {
      throw new LedgerError('LEDGER.INVALID_REQUEST', { fields: [{ field: 'tenant', problem: 'is required: the caller acts for several tenants' }] });
    }
    return { principal: agent.id, tenant: only };
  }
  if (!agent.tenants.has(tenant)) throw new LedgerError('LEDGER.FORBIDDEN');
  return { principal: agent.id, tenant };
}
