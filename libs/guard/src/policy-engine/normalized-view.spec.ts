import { describe, expect, it } from '@jest/globals';
import { RequestContext } from '@mastra/core/request-context';
import { createGuardedAgent } from '../agent/guarded-agent.js';
import { ACTOR_CONTEXT_KEY } from '../context.js';
import { collectStreamText, scriptedModel } from '../testing/scripted-model.js';
import { NormalizedText, normalizedView } from './normalized-view.js';
import { denyPatterns } from './policies/deny-patterns.js';
import { piiSecrets } from './policies/pii-secrets.js';

// Look-alike writing of a phrase: each maps every ASCII letter of the phrase to another form.
const mathBold = (s: string) => [...s].map((c) => (/[a-z]/.test(c) ? String.fromCodePoint(0x1d41a + c.charCodeAt(0) - 97) : c)).join('');
const fullwidth = (s: string) => [...s].map((c) => (/[!-~]/.test(c) ? String.fromCharCode(c.charCodeAt(0) + 0xfee0) : c === ' ' ? '\u3000' : c)).join('');
const zeroWidth = (s: string) => [...s].join('\u200b');
const marked = (s: string) => [...s].map((c) => (/[a-z]/.test(c) ? `${c}\u0301\u0323` : c)).join('');
const cyrillic = (s: string) => s.replace(/o/g, 'о').replace(/e/g, 'е').replace(/a/g, 'а').replace(/p/g, 'р');
const smallCaps = (s: string) => s.replace(/[a-z]/g, (c) => ({ a: 'ᴀ', b: 'ʙ', d: 'ᴅ', e: 'ᴇ', f: 'ꜰ', h: 'ʜ', i: 'ɪ', n: 'ɴ', o: 'ᴏ', p: 'ᴘ', r: 'ʀ', s: 'ꜱ' })[c] ?? c);
const negativeSquared = (s: string) => [...s].map((c) => (/[a-z]/.test(c) ? String.fromCodePoint(0x1f170 + c.charCodeAt(0) - 97) : c)).join('');
const spaced = (s: string) => s.replace(/ /g, ' \n\t ');

const FORMS: Readonly<Record<string, (s: string) => string>> = { mathBold, fullwidth, zeroWidth, marked, cyrillic, smallCaps, negativeSquared, spaced };

describe('normalized view', () => {
  it.each(Object.entries(FORMS))('folds %s writing back to the plain phrase', (_name, form) => {
    expect(normalizedView(form('forbidden phrase')).toLowerCase()).toBe('forbidden phrase');
  });

  it('folds ligatures, circled letters and compatibility spaces, and keeps case and digits', () => {
    expect(normalizedView('conﬁdential ⓕⓘⓛⓔ\u00a0No.\u20037 O0')).toBe('confidential file No. 7 O0');
  });

  it('maps every view character back to the source code point that produced it', () => {
    const text = new NormalizedText().append(`a${mathBold('b')}\u200bc ﬁ`);
    // The zero-width space is dropped; both letters of the ligature start where it does.
    expect(text.text).toBe('abc fi');
    expect([0, 1, 2, 3, 4, 5].map((i) => text.sourceOffset(i))).toEqual([0, 1, 4, 5, 6, 6]);
    expect(text.sourceOffset(6)).toBe(text.source.length);
  });

  it('gives the same view however the source is cut into deltas, surrogate pairs included', () => {
    const source = `x ${mathBold('secret')}\u200b  ${fullwidth('KEY')} é\u0301 ${cyrillic('paper')} ${negativeSquared('ab')}\n`;
    const whole = normalizedView(source);
    for (let size = 1; size <= 5; size++) {
      const text = new NormalizedText();
      for (let i = 0; i < source.length; i += size) text.append(source.slice(i, i + size));
      expect(text.text).toBe(whole);
      expect(text.sourceOffset(whole.length)).toBe(source.length);
    }
  });

  it('keeps plain ASCII as its own view, offsets the identity', () => {
    const text = new NormalizedText().append('plain words, ').append('one space each');
    expect(text.text).toBe(text.source);
    expect(text.sourceOffset(7)).toBe(7);
  });
});

function context(): RequestContext {
  const rc = new RequestContext();
  rc.set(ACTOR_CONTEXT_KEY, { id: 'user-1', role: 'operator' });
  return rc;
}

async function streamed(chunks: readonly string[]) {
  const agent = createGuardedAgent({
    id: 'support',
    name: 'Support',
    instructions: 'x',
    model: scriptedModel({ chunks }) as never,
    allowedRoles: ['operator'],
    policies: [denyPatterns(['forbidden phrase']), piiSecrets({ detectors: ['awsAccessKey'] })],
  });
  const stream = await agent.stream('go', { requestContext: context() });
  const { text } = await collectStreamText(stream.fullStream);
  return { text, result: await stream.result() };
}

describe('hold-back on the normalized view', () => {
  it.each(Object.entries(FORMS))('shows no letter of a deny pattern written in %s, streamed a character at a time', async (_name, form) => {
    const written = form('forbidden phrase');
    const preamble = 'Note: all of this preamble is fine to show, word by word. ';
    const { text, result } = await streamed([...preamble.split(/(?<= )/), ...Array.from(written), ' and more words after it']);
    expect(result.tripwire?.code).toBe('POLICY.DENIED');
    // The caller saw at most what came before the phrase.
    expect(preamble.startsWith(text)).toBe(true);
  });

  it('shows nothing of an access key written in full-width letters, streamed a character at a time', async () => {
    const { text, result } = await streamed(['key: ', ...Array.from(fullwidth('AKIAIOSFODNN7EXAMPLE')), ' end']);
    expect(result.tripwire?.code).toBe('POLICY.DENIED');
    expect('key: '.startsWith(text)).toBe(true);
  });

  it('releases look-alike text that matches nothing, whole', async () => {
    const written = `${mathBold('harmless')} ${cyrillic('paper')} words`;
    const { text, result } = await streamed(Array.from(written));
    expect(result.stopReason).toBe('finished');
    expect(text).toBe(written);
  });
});
