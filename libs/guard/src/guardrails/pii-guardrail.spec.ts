import { describe, expect, it } from '@jest/globals';
import { createPiiGuardrail } from './pii-guardrail.js';
import { type GuardrailInput } from './types.js';

// The PII guardrail masks what the content policies would find: on the text as written and on
// its normalized view, mapped back to the characters that wrote it.

const input = (value: string): GuardrailInput => ({ placement: 'post-model', value, context: {}, signal: new AbortController().signal });
const fullwidth = (s: string) => [...s].map((c) => (c >= '!' && c <= '~' ? String.fromCharCode(c.charCodeAt(0) + 0xfee0) : c)).join('');

describe('createPiiGuardrail on look-alike writing', () => {
  it.each([
    ['full-width digits', `card ${fullwidth('4111 1111 1111 1111')} ok`],
    ['zero-width spaces between the digits', `card ${[...'4111111111111111'].join('\u200b')} ok`],
    ['two spaces between its groups', 'card 4111  1111  1111  1111 ok'],
    ['a full-width e-mail address', `mail ${fullwidth('jane.doe@example.com')} ok`],
  ])('masks a card or an address written with %s, leaving no digit or letter of it', async (_name, written) => {
    const verdict = await createPiiGuardrail().check(input(written));
    expect(verdict.action).toBe('mask');
    const masked = String(verdict.payload);
    expect(masked).toMatch(/^(card \[CARD\]|mail \[EMAIL\]) ok$/);
  });

  it('keeps the text around a masked find as written', async () => {
    const verdict = await createPiiGuardrail({ rules: ['credit-card'] }).check(input(`Ｔｏｔａｌ: card ${fullwidth('4111111111111111')}, thanks`));
    expect(verdict.payload).toBe('Ｔｏｔａｌ: card [CARD], thanks');
  });
});
