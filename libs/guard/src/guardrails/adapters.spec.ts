import { describe, expect, it } from '@jest/globals';
import { createModerationGuardrail } from './moderation-guardrail.js';
import { createPiiGuardrail, luhnValid } from './pii-guardrail.js';
import { guardrailByName, registerGuardrail, registeredGuardrails } from './registry.js';
import { runGuardrails } from './run-guardrails.js';
import { type GuardrailInput } from './types.js';

const input = (value: GuardrailInput['value'], placement: GuardrailInput['placement'] = 'pre-prompt'): GuardrailInput => ({ placement, value, context: {}, signal: new AbortController().signal });

describe('createPiiGuardrail', () => {
  it('masks email, E.164 phone, a Luhn-valid card and IPv4 by default', async () => {
    const verdict = await createPiiGuardrail().check(input('mail jane.doe@example.com or call +14155550123, card 4111 1111 1111 1111, host 10.0.0.12.'));
    expect(verdict).toEqual({
      action: 'mask',
      outcome: 'complete',
      detections: ['pii.email', 'pii.credit-card', 'pii.phone', 'pii.ipv4'],
      payload: 'mail [EMAIL] or call [PHONE], card [CARD], host [IPV4].',
      reason: 'pii.masked',
    });
  });

  it('leaves a card-like number that fails Luhn, and an out-of-range address, alone', async () => {
    const verdict = await createPiiGuardrail().check(input('order 4111 1111 1111 1112 from 999.1.1.1'));
    expect(verdict.action).toBe('allow');
    expect(luhnValid('4111111111111111')).toBe(true);
  });

  it.each([
    ['a card number followed by its CVV', '4111 1111 1111 1111 123', '[CARD] 123'],
    ['a card number followed by its expiry', '4111111111111111 12/27', '[CARD] 12/27'],
    ['a dashed card number, its expiry and CVV', '4111-1111-1111-1111 exp 12/27 cvv 123', '[CARD] exp 12/27 cvv 123'],
    ['a card number after a quantity', '2 4111 1111 1111 1111', '2 [CARD]'],
    ['a card number after an item number', 'item 42 4111111111111111', 'item 42 [CARD]'],
    ['a card number after a quantity and a comma', 'qty 3, 5500 0000 0000 0004', 'qty 3, [CARD]'],
    ['an E.164 number after a short number', 'call 2 +1 415 555 2671', 'call 2 [PHONE]'],
    ['a North-American number after a room number', 'room 12 (415) 555-2671', 'room 12 [PHONE]'],
  ])('masks %s, leaving the number beside it', async (_label, text, masked) => {
    expect(await createPiiGuardrail().check(input(text))).toMatchObject({ action: 'mask', payload: masked });
  });

  it('finds what piiSecrets finds, with the same detectors', async () => {
    // One implementation: an issuer range and North-American numbers count here as there.
    expect((await createPiiGuardrail().check(input('order 1000 0000 0000 0000 9 shipped'))).action).toBe('allow');
    expect(await createPiiGuardrail().check(input('call (212) 555-0123'))).toMatchObject({ payload: 'call [PHONE]' });
  });

  it('masks string leaves of JSON and only the rules asked for', async () => {
    const verdict = await createPiiGuardrail({ rules: ['email'] }).check(input({ to: ['a@b.io'], note: 'ip 1.2.3.4' }, 'tool-args'));
    expect(verdict).toMatchObject({ action: 'mask', detections: ['pii.email'], payload: { to: ['[EMAIL]'], note: 'ip 1.2.3.4' } });
  });

  it.each(['deny', 'observe', 'halt'] as const)('applies the configured action %s without a payload', async (action) => {
    const verdict = await createPiiGuardrail({ action }).check(input('a@b.io'));
    expect(verdict).toMatchObject({ action, detections: ['pii.email'] });
    expect(verdict).not.toHaveProperty('payload');
  });
});

describe('createModerationGuardrail', () => {
  it('trips above the threshold with the configured action and category names', async () => {
    const g = createModerationGuardrail({ classify: async () => ({ score: 0.9, categories: ['violence', 'order.q7z'] }), threshold: 0.8, action: 'deny', categories: ['violence'] });
    expect(g.detections).toEqual(['moderation.flagged', 'moderation.violence']);
    expect(await g.check(input('text'))).toMatchObject({ action: 'deny', detections: ['moderation.violence'] });
    // A category the classifier made up is not named: it could spell the text.
    const unconfigured = createModerationGuardrail({ classify: async () => ({ score: 0.9, categories: ['q7z'] }), threshold: 0.8, action: 'deny' });
    expect(await unconfigured.check(input('text'))).toMatchObject({ action: 'deny', detections: ['moderation.flagged'] });
  });

  it('allows at or below the threshold and passes the text and a signal to the classifier', async () => {
    const seen: unknown[] = [];
    const g = createModerationGuardrail({ classify: (text, { signal }) => { seen.push(text, signal instanceof AbortSignal); return { score: 0.8 }; }, threshold: 0.8 });
    expect((await g.check(input({ a: 'one', b: ['two'] }))).action).toBe('allow');
    expect(seen).toEqual(['one\ntwo', true]);
  });

  it('halts by default on a flag', async () => {
    expect((await createModerationGuardrail({ classify: () => ({ flagged: true }) }).check(input('x'))).action).toBe('halt');
  });

  it('is deny/partial when the classifier times out, and aborts its signal', async () => {
    let aborted = false;
    const g = createModerationGuardrail({ classify: (_t, { signal }) => new Promise(() => signal.addEventListener('abort', () => (aborted = true))), timeoutMs: 20 });
    expect(await g.check(input('x'))).toMatchObject({ action: 'deny', outcome: 'partial', reason: 'moderation.timeout' });
    expect(aborted).toBe(true);
  });

  it('is deny/partial when the classifier throws or answers nonsense', async () => {
    expect(await createModerationGuardrail({ classify: () => { throw new Error('down'); } }).check(input('x'))).toMatchObject({ action: 'deny', outcome: 'partial' });
    expect(await createModerationGuardrail({ classify: () => ({ score: 7 }) as never }).check(input('x'))).toMatchObject({ action: 'deny', outcome: 'partial' });
  });
});

describe('guardrail registry', () => {
  it('returns a faulting moderation guardrail when no classifier was given: never a silent allow', async () => {
    const decision = await runGuardrails([guardrailByName('moderation')], input('anything'));
    expect(decision).toMatchObject({ by: 'moderation', verdict: { action: 'deny', outcome: 'partial' } });
  });

  it('builds pii and moderation by name with options', async () => {
    expect((await guardrailByName('pii', { action: 'deny' }).check(input('a@b.io'))).action).toBe('deny');
    expect((await guardrailByName('moderation', { classify: () => ({ score: 0 }) }).check(input('x'))).action).toBe('allow');
  });

  it('throws a coded error for an unknown name and refuses to replace a registered one', () => {
    expect(() => guardrailByName('no-such')).toThrow(expect.objectContaining({ code: 'GUARDRAIL.UNKNOWN' }) as never);
    expect(() => registerGuardrail('pii', () => createPiiGuardrail())).toThrow(expect.objectContaining({ code: 'GUARDRAIL.ALREADY_REGISTERED' }) as never);
    registerGuardrail('spec-extra', () => createPiiGuardrail({ name: 'spec-extra' }));
    expect(registeredGuardrails()).toEqual(expect.arrayContaining(['moderation', 'pii', 'spec-extra']));
  });
});
