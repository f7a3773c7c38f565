import { createHash, randomUUID } from 'node:crypto';

/** An agent of the idempotency ledger with a fresh API key (never written anywhere but to the processes that need it). */
export interface LedgerAgent {
  readonly id: string;
  readonly tenants: readonly string[];
  readonly apiKey: string;
  /** What an agent process is started with: its key, read by the fixtures as GATEHOUSE_LEDGER_API_KEY. */
  readonly agentEnv: { readonly GATEHOUSE_LEDGER_API_KEY: string };
  /** What a raw HTTP caller sends. */
  readonly headers: { readonly authorization: string; readonly 'content-type': 'application/json' };
}

/**
 * A ledger agent bound to `tenants` (default `default`: the tenant a connector names when the host
 * gives none, as the fixtures' calls do).
 */
export function ledgerAgent(tenants: readonly string[] = ['default'], id = `agent:${randomUUID().slice(0, 8)}`): LedgerAgent {
  const apiKey = `lk_${randomUUID()}`;
  return { id, tenants, apiKey, agentEnv: { GATEHOUSE_LEDGER_API_KEY: apiKey }, headers: { authorization: `Bearer ${apiKey}`, 'content-type': 'application/json' } };
}

/** The ledger service's GATEHOUSE_LEDGER_AGENTS for `agents`: only the keys' digests. */
export function ledgerAgentsEnv(...agents: readonly LedgerAgent[]): { readonly GATEHOUSE_LEDGER_AGENTS: string } {
  const entries = agents.map((a) => ({ id: a.id, apiKeySha256: createHash('sha256').update(a.apiKey).digest('hex'), tenants: a.tenants }));
  return { GATEHOUSE_LEDGER_AGENTS: JSON.stringify(entries) };
}
