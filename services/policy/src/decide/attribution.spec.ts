import { describe, expect, it } from '@jest/globals';
import { parseOperators } from '../policy-config.js';
import { attribute, attributedIdentity } from './attribution.js';

const digest = 'a'.repeat(64);
const [readOnly, acme, platform] = parseOperators(
  JSON.stringify([
    { id: 'user:auditor', role: 'policy-reader', apiKeySha256: digest, policySets: '*' },
    { id: 'agent:refund-bot', role: 'support', apiKeySha256: digest, policySets: '*', tenants: ['acme'], agent: 'refund-bot', kind: 'agent' },
    { id: 'user:platform', role: 'support', apiKeySha256: digest, policySets: '*', tenants: ['acme', 'globex'] },
  ]),
);

describe('attribution of a recorded decision', () => {
  it('refuses a read-only operator, another tenant, and a missing tenant of an operator of several', () => {
    expect(attribute(readOnly!, { tenant: 'acme' })).toEqual({ ok: false, refusal: 'read-only' });
    expect(attribute(acme!, { tenant: 'globex' })).toEqual({ ok: false, refusal: 'foreign-tenant' });
    expect(attribute(platform!, {})).toEqual({ ok: false, refusal: 'tenant-required' });
  });

  it("is the operator in its own tenant, whatever actor, agent and run the body claims", () => {
    const claimed = { tenant: 'acme', agent: 'other-bot', runId: 'run-victim', actor: { id: 'user:ceo', role: 'admin' }, environment: 'prod' };
    const answer = attribute(acme!, claimed);
    expect(answer).toEqual({ ok: true, attribution: { tenant: 'acme', actor: { id: 'agent:refund-bot', role: 'support', kind: 'agent' }, agentId: 'refund-bot' } });
    if (!answer.ok) throw new Error('unreachable');
    expect(attributedIdentity(answer.attribution, claimed)).toEqual({ tenant: 'acme', agent: 'refund-bot', actor: { id: 'agent:refund-bot', role: 'support' }, environment: 'prod' });
    expect(attribute(acme!, {})).toMatchObject({ ok: true, attribution: { tenant: 'acme' } });
    expect(attribute(platform!, { tenant: 'globex' })).toEqual({ ok: true, attribution: { tenant: 'globex', actor: { id: 'user:platform', role: 'support', kind: 'human' } } });
  });

  it('refuses a wildcard or empty tenant list in the configuration', () => {
    for (const tenants of ['*', []]) {
      expect(() => parseOperators(JSON.stringify([{ id: 'x', role: 'r', apiKeySha256: digest, policySets: '*', tenants }]))).toThrow(/tenants/);
    }
  });
});
