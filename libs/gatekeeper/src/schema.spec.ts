import { describe, expect, it } from '@jest/globals';
import { GatehouseError } from '@gatehouse/contracts';
import { GatekeeperBundleSchema, parseGatekeeperBundle } from './schema.js';

const yamlBundle = `
policySetId: payments
policies:
  - id: refund-small
    version: 1.0.0
    priority: 100
    match:
      agents: [refund-agent]
      tools: ["stripe.*"]
      environments: [production]
    rules:
      allowWhen: input.amount <= 100
      requireApprovalWhen: input.amount > 50
  - id: clamp-export
    version: "2"
    priority: 10
    match: { tools: ["*"] }
    rules:
      denyWhen: { predicate: outside-hours, args: [9, 17] }
      rewrite:
        when: input.limit > 1000
        set: { limit: 1000, "options.dryRun": true, total: { expr: "input.limit * 2" } }
        remove: [debug]
`;

function errorOf(source: unknown): GatehouseError {
  try {
    parseGatekeeperBundle(source);
  } catch (error) {
    if (error instanceof GatehouseError) return error;
    throw error;
  }
  throw new Error('expected an error');
}

const valid = {
  policySetId: 'payments',
  policies: [{ id: 'p1', version: '1', priority: 1, match: {}, rules: { allowWhen: 'true' } }],
};

describe('gatekeeper bundle schema', () => {
  it('parses a YAML bundle', () => {
    const bundle = parseGatekeeperBundle(yamlBundle);
    expect(bundle.policySetId).toBe('payments');
    expect(bundle.policies.map((p) => p.id)).toEqual(['refund-small', 'clamp-export']);
    expect(bundle.policies[1]!.rules.rewrite?.set?.['options.dryRun']).toBe(true);
    expect(bundle.policies[1]!.rules.denyWhen).toEqual({ predicate: 'outside-hours', args: [9, 17] });
  });

  it('parses the same bundle as JSON text and as an object', () => {
    const fromYaml = parseGatekeeperBundle(yamlBundle);
    expect(parseGatekeeperBundle(JSON.stringify(fromYaml))).toEqual(fromYaml);
    expect(parseGatekeeperBundle(fromYaml)).toEqual(fromYaml);
    expect(GatekeeperBundleSchema.safeParse(fromYaml).success).toBe(true);
  });

  it.each([
    ['a missing policySetId', { policies: [] }, 'policySetId'],
    ['a priority that is not an integer', { ...valid, policies: [{ ...valid.policies[0], priority: 1.5 }] }, 'policies.0.priority'],
    ['an unknown rule', { ...valid, policies: [{ ...valid.policies[0], rules: { allowIf: 'true' } }] }, 'policies.0.rules'],
    ['a policy without rules', { ...valid, policies: [{ ...valid.policies[0], rules: {} }] }, 'policies.0.rules'],
    ['an inner wildcard', { ...valid, policies: [{ ...valid.policies[0], match: { tools: ['pay*ments'] } }] }, 'policies.0.match.tools.0'],
    ['an empty match list', { ...valid, policies: [{ ...valid.policies[0], match: { agents: [] } }] }, 'policies.0.match.agents'],
    ['a duplicate policy id', { ...valid, policies: [valid.policies[0], valid.policies[0]] }, 'policies.1.id'],
    ['a rewrite of a prototype path', { ...valid, policies: [{ ...valid.policies[0], rules: { rewrite: { set: { '__proto__.admin': true } } } }] }, 'policies.0.rules.rewrite.set.__proto__.admin'],
    ['an empty rewrite', { ...valid, policies: [{ ...valid.policies[0], rules: { rewrite: {} } }] }, 'policies.0.rules.rewrite'],
    ['an unknown top-level field', { ...valid, extra: 1 }, '(root)'],
  ])('refuses %s, naming the field', (_name, bundle, field) => {
    const error = errorOf(bundle);
    expect(error.code).toBe('GATEKEEPER.BUNDLE_INVALID');
    expect(error.category).toBe('validation');
    expect(error.details['field']).toBe(field);
  });

  it('never echoes a value in the error', () => {
    const secret = 'sk_live_SECRET_VALUE';
    const error = errorOf({ policySetId: 'p', policies: [{ id: 'x', version: '1', priority: secret, match: {}, rules: { allowWhen: 'true' } }] });
    expect(JSON.stringify(error.toJSON())).not.toContain(secret);
    expect(error.message).not.toContain(secret);
    const yamlError = errorOf(`policySetId: p\npolicies: [ { id: "${secret}" `);
    expect(yamlError.code).toBe('GATEKEEPER.BUNDLE_UNPARSEABLE');
    expect(JSON.stringify(yamlError.toJSON())).not.toContain(secret);
    const jsonError = errorOf(`{"policySetId": "${secret}", `);
    expect(jsonError.code).toBe('GATEKEEPER.BUNDLE_UNPARSEABLE');
    expect(jsonError.details['format']).toBe('json');
    expect(JSON.stringify(jsonError.toJSON())).not.toContain(secret);
  });

  it('refuses duplicate YAML keys and oversized text', () => {
    expect(errorOf('policySetId: a\npolicySetId: b\npolicies: []\n').code).toBe('GATEKEEPER.BUNDLE_UNPARSEABLE');
    expect(errorOf(`policySetId: a\n#${'x'.repeat(1_000_001)}`).code).toBe('GATEKEEPER.BUNDLE_TOO_LARGE');
  });
});
