import { describe, expect, it } from '@jest/globals';
import { type JsonValue } from '@gatehouse/contracts';
import { createGatekeeper, gatekeeperGuardrail, type GatekeeperMode } from '../gatekeeper/index.js';
import { createModerationGuardrail } from './moderation-guardrail.js';
import { createPiiGuardrail } from './pii-guardrail.js';
import { ACTION_REASON, GUARDRAIL_REASONS, isGuardrailReasonCode } from './reasons.js';
import { guardrailByName } from './registry.js';
import { createSchemaGuardrail } from './schema-guardrail.js';
import { type Guardrail, type GuardrailInput, type GuardrailPlacement } from './types.js';

const input = (value: JsonValue, placement: GuardrailPlacement = 'tool-args', tool?: GuardrailInput['tool']): GuardrailInput => ({
  placement, value, ...(tool ? { tool } : {}), context: { agentId: 'a', actor: { id: 'u1', role: 'support' } }, signal: new AbortController().signal,
});

describe('the guardrail reason catalogue', () => {
  it('is frozen, and every action falls back to one of its codes', () => {
    expect(Object.isFrozen(GUARDRAIL_REASONS)).toBe(true);
    expect(Object.isFrozen(ACTION_REASON)).toBe(true);
    for (const code of Object.values(ACTION_REASON)) expect(isGuardrailReasonCode(code)).toBe(true);
  });

  it('knows its own codes only: no inherited name, no sentence, no other case', () => {
    for (const notACode of ['toString', '__proto__', 'constructor', 'hasOwnProperty', GUARDRAIL_REASONS['pii.detected'], 'PII.DETECTED', '', 7, undefined]) {
      expect(isGuardrailReasonCode(notACode)).toBe(false);
    }
    expect(isGuardrailReasonCode('pii.detected')).toBe(true);
  });
});

describe('shipped guardrails name catalogue codes, never sentences of their own', () => {
  const gatekeeper = (mode: GatekeeperMode) => gatekeeperGuardrail(createGatekeeper({
    bundle: { policySetId: 'tools', policies: [{ id: 'mail', version: '1', priority: 10, match: { tools: ['mail.*'] }, rules: { denyWhen: 'input.to endsWith "@competitor.example"', allowWhen: 'identity.actor.role == "support"' } }] },
    mode,
    validateInput: () => true,
  }));
  const cases: [string, Guardrail, GuardrailInput][] = [
    ['pii (mask)', createPiiGuardrail(), input('mail q7z@example.com')],
    ['pii (deny)', createPiiGuardrail({ action: 'deny' }), input('mail q7z@example.com')],
    ['moderation (flagged)', createModerationGuardrail({ classify: () => ({ flagged: true }) }), input('x', 'pre-prompt')],
    ['moderation (no score)', createModerationGuardrail({ classify: () => ({}) as never }), input('x', 'pre-prompt')],
    ['moderation (failed)', createModerationGuardrail({ classify: () => { throw new Error('4242'); } }), input('x', 'pre-prompt')],
    ['moderation (unconfigured)', guardrailByName('moderation'), input('x', 'pre-prompt')],
    ['schema (invalid)', createSchemaGuardrail(), input({ q7z: 4242 }, 'tool-args', { id: 't', inputSchema: { additionalProperties: false } })],
    ['schema (no schema)', createSchemaGuardrail(), input({ q: 1 }, 'tool-args', { id: 't' })],
    ['schema (unusable)', createSchemaGuardrail(), input({ q: 1 }, 'tool-args', { id: 't', inputSchema: { $ref: '#/nowhere' } })],
    ['gatekeeper (deny)', gatekeeper('enforce'), input({ to: 'q7z@competitor.example' }, 'tool-args', { id: 'mail.send' })],
    ['gatekeeper (allow)', gatekeeper('enforce'), input({ to: 'q7z@b.example' }, 'tool-args', { id: 'mail.send' })],
    ['gatekeeper (no policy)', gatekeeper('enforce'), input({ to: 'q7z@b.example' }, 'tool-args', { id: 'other.tool' })],
    ['gatekeeper (audit mode)', gatekeeper('audit'), input({ to: 'q7z@competitor.example' }, 'tool-args', { id: 'mail.send' })],
    ['gatekeeper (not a tool call)', gatekeeper('enforce'), input('x', 'pre-prompt')],
  ];

  it.each(cases)('%s', async (_name, guardrail, value) => {
    const verdict = await guardrail.check(value);
    expect(isGuardrailReasonCode(verdict.reason)).toBe(true);
  });

  it('the gatekeeper names the outcome of the policy in its code', async () => {
    const reasons = await Promise.all([
      gatekeeper('enforce').check(input({ to: 'q7z@competitor.example' }, 'tool-args', { id: 'mail.send' })),
      gatekeeper('enforce').check(input({ to: 'q7z@b.example' }, 'tool-args', { id: 'other.tool' })),
      gatekeeper('audit').check(input({ to: 'q7z@competitor.example' }, 'tool-args', { id: 'mail.send' })),
    ]);
    expect(reasons.map((v) => v.reason)).toEqual(['policy.denied', 'policy.no-match', 'policy.observed']);
  });
});
