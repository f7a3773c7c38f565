import { describe, expect, it } from '@jest/globals';
import { createHash } from 'node:crypto';
import { signingEnv, TEST_KEYS } from '@gatehouse/contracts/testing';
import { DEFAULT_MAX_BUDGETS, DEFAULT_MAX_PENDING_KEYS, LEDGER_ENV, ledgerOptionsFromEnv } from '../ledger-config.js';
import { authenticateAgent, callerFor, parseLedgerAgents } from './agent-auth.js';

const KEY_A = 'lk_agent-a-0123456789abcdef';
const KEY_B = 'lk_agent-b-0123456789abcdef';
const sha = (s: string) => createHash('sha256').update(s).digest('hex');
const list = JSON.stringify([
  { id: 'agent:a', apiKeySha256: sha(KEY_A), tenants: ['acme'] },
  { id: 'agent:b', apiKeySha256: sha(KEY_B), tenants: ['acme', 'globex'] },
]);

function configError(run: () => unknown): unknown {
  try {
    run();
  } catch (error) {
    return error;
  }
  throw new Error('expected a configuration error');
}

describe('ledger agents', () => {
  const agents = parseLedgerAgents(list, LEDGER_ENV.agents);

  it('recognises each configured key and names its agent and tenants, keeping only digests', () => {
    expect(authenticateAgent(`Bearer ${KEY_A}`, agents)).toMatchObject({ id: 'agent:a', tenants: new Set(['acme']) });
    expect(authenticateAgent(`bearer ${KEY_B}`, agents).id).toBe('agent:b');
    expect(JSON.stringify(agents)).not.toContain(KEY_A);
  });

  it('refuses a missing, malformed or unknown key with LEDGER.UNAUTHENTICATED, and everything when none is configured', () => {
    for (const header of [undefined, '', KEY_A, `Basic ${KEY_A}`, `Bearer ${KEY_A} x`, `Bearer ${KEY_A}x`, 'Bearer short']) {
      expect(() => authenticateAgent(header, agents)).toThrow(expect.objectContaining({ code: 'LEDGER.UNAUTHENTICATED' }));
    }
    expect(parseLedgerAgents(undefined, LEDGER_ENV.agents)).toEqual([]);
    expect(() => authenticateAgent(`Bearer ${KEY_A}`, [])).toThrow(expect.objectContaining({ code: 'LEDGER.UNAUTHENTICATED' }));
  });

  it("scopes a request to a tenant of the agent's own: 403 for another, the only one when none is named", () => {
    const [a, b] = agents as [(typeof agents)[0], (typeof agents)[0]];
    expect(callerFor(a, 'acme')).toEqual({ principal: 'agent:a', tenant: 'acme' });
    expect(callerFor(a, undefined)).toEqual({ principal: 'agent:a', tenant: 'acme' });
    expect(() => callerFor(a, 'globex')).toThrow(expect.objectContaining({ code: 'LEDGER.FORBIDDEN' }));
    expect(callerFor(b, 'globex')).toEqual({ principal: 'agent:b', tenant: 'globex' });
    // An agent of several tenants must say which: never a guess.
    expect(() => callerFor(b, undefined)).toThrow(expect.objectContaining({ code: 'LEDGER.INVALID_REQUEST', details: { fields: [expect.objectContaining({ field: 'tenant' })] } }));
  });

  it('refuses a malformed list by naming the variable and the field, never a key', () => {
    const bad = [
      JSON.stringify([{ id: 'agent:a', apiKeySha256: KEY_A, tenants: ['acme'] }]),
      JSON.stringify([{ id: 'agent:a', apiKeySha256: sha(KEY_A), tenants: '*' }]),
      JSON.stringify([{ id: 'agent:a', apiKeySha256: sha(KEY_A), tenants: [] }]),
      JSON.stringify([{ id: 'agent:a', apiKeySha256: sha(KEY_A), tenants: ['acme'], role: 'admin' }]),
      JSON.stringify([{ id: 'agent:a', apiKeySha256: sha(KEY_A), tenants: ['acme'] }, { id: 'agent:a', apiKeySha256: sha(KEY_B), tenants: ['acme'] }]),
      JSON.stringify([{ id: 'agent:a', apiKeySha256: sha(KEY_A), tenants: ['acme'] }, { id: 'agent:c', apiKeySha256: sha(KEY_A), tenants: ['globex'] }]),
      '[{',
    ];
    for (const raw of bad) {
      const error = configError(() => parseLedgerAgents(raw, LEDGER_ENV.agents));
      expect(error).toMatchObject({ code: 'CONFIG.INVALID', details: { variable: LEDGER_ENV.agents } });
      expect((error as Error).message).not.toContain(KEY_A);
    }
  });

  it('reads the list and the bounds from the environment, with sane defaults', () => {
    const keys = signingEnv(TEST_KEYS.ledger);
    try {
      const options = ledgerOptionsFromEnv({ ...keys.env, [LEDGER_ENV.agents]: list });
      expect(options.agents.map((a) => a.id)).toEqual(['agent:a', 'agent:b']);
      expect({ pending: options.maxPendingKeys, budgets: options.maxBudgets }).toEqual({ pending: DEFAULT_MAX_PENDING_KEYS, budgets: DEFAULT_MAX_BUDGETS });
      expect(ledgerOptionsFromEnv({ ...keys.env, [LEDGER_ENV.maxPendingKeys]: '5', [LEDGER_ENV.maxBudgets]: '7' })).toMatchObject({ maxPendingKeys: 5, maxBudgets: 7, agents: [] });
      for (const bad of ['0', '-1', '1.5', 'many']) {
        expect(() => ledgerOptionsFromEnv({ ...keys.env, [LEDGER_ENV.maxPendingKeys]: bad })).toThrow(expect.objectContaining({ details: { variable: LEDGER_ENV.maxPendingKeys } }));
      }
      expect(() => ledgerOptionsFromEnv({ ...keys.env, [LEDGER_ENV.agentsFile]: '/nonexistent/agents.json' })).toThrow(expect.objectContaining({ details: { variable: LEDGER_ENV.agentsFile } }));
    } finally {
      keys.remove();
    }
  });
});
