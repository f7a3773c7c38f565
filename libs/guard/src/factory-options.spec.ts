import { describe, expect, it } from '@jest/globals';
import { createSpawnAgentCli, runAgentCli } from './agent-cli/index.js';
import { networkEgress, tenantIsolation } from './connector-sdk/index.js';
import { createModerationGuardrail, createPiiGuardrail, createSchemaGuardrail, guardrailByName, runGuardrails } from './guardrails/index.js';
import { createInMemoryApprovalGateway, scriptedModel } from './testing/index.js';

// Standard: every factory refuses an option it does not know, naming it, instead of dropping it
// (a migrating user's `auditSink` or a misspelt `timeoutMS` must not vanish without a word). The
// gatekeeper factories are covered in @gatehouse/gatekeeper's gatekeeper.spec.ts (the guardrail
// adapter in gatekeeper/guardrail.spec.ts), the connector's in its own specs.
const refusal = (make: () => unknown): string => {
  try {
    make();
  } catch (error) {
    return error instanceof TypeError ? error.message : `not a TypeError: ${String(error)}`;
  }
  return 'accepted';
};

describe('public factories refuse options they do not know', () => {
  it.each([
    ['createSchemaGuardrail', () => createSchemaGuardrail({ draft: '2020-12', onMissing: 'allow' } as never), 'onMissing'],
    ['createPiiGuardrail', () => createPiiGuardrail({ action: 'mask', auditSink: () => undefined } as never), 'auditSink'],
    ['createModerationGuardrail', () => createModerationGuardrail({ classify: async () => ({}), timeoutMS: 5 } as never), 'timeoutMS'],
    ['guardrailByName', () => guardrailByName('pii', { action: 'deny', defaultDecision: 'allow' }), 'defaultDecision'],
    ['networkEgress', () => networkEgress({ allowedDomains: ['api.example.com'], allowSubdomains: true } as never), 'allowSubdomains'],
    ['tenantIsolation', () => tenantIsolation({ tenant: 'acme' } as never), 'tenant'],
    ['createSpawnAgentCli', () => createSpawnAgentCli({ killTimeoutMs: 10 } as never), 'killTimeoutMs'],
    ['createInMemoryApprovalGateway', () => createInMemoryApprovalGateway({ approvalProvider: {} } as never), 'approvalProvider'],
    ['scriptedModel', () => scriptedModel({ text: 'hi', delayMs: 5 } as never), 'delayMs'],
  ])('%s', (where, make, option) => {
    // guardrailByName hands its options to the built-in's factory, which names itself.
    expect(refusal(make)).toMatch(new RegExp(`^${where === 'guardrailByName' ? 'createPiiGuardrail' : where}: unknown option "${option}"`));
  });

  it('the same factories still take every option they document', () => {
    expect(refusal(() => createPiiGuardrail({ rules: ['email'], action: 'mask', name: 'pii', placements: ['pre-prompt'] }))).toBe('accepted');
    expect(refusal(() => networkEgress({ allowedDomains: ['api.example.com'] }))).toBe('accepted');
    expect(refusal(() => tenantIsolation({ tenants: ['acme'] }))).toBe('accepted');
    expect(refusal(() => scriptedModel({ text: 'hi', partDelayMs: 1 }))).toBe('accepted');
  });

  it('runGuardrails rejects an unknown option; runAgentCli refuses one with its typed error', async () => {
    const input = { placement: 'pre-prompt' as const, value: 'hello', context: {}, signal: new AbortController().signal };
    await expect(runGuardrails([], input, { timeout: 5 } as never)).rejects.toThrow(/^runGuardrails: unknown option "timeout"/);
    await expect(runAgentCli({ definition: {}, argv: [], sandbox: 'none' } as never)).rejects.toMatchObject({ code: 'AGENT_CLI.INPUT_INVALID', metadata: { reason: 'unknown-option' } });
  });
});
