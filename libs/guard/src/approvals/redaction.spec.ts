import { describe, expect, it } from '@jest/globals';
import { parseRedactPath, REDACTED, redactArguments, restoreRedacted } from './redaction.js';

describe('argument redaction', () => {
  const args = { card: { number: '4111111111111111', exp: '12/30' }, items: [{ sku: 'a', token: 't1' }, { sku: 'b', token: 't2' }], 'a/b': 1 };

  it('redacts on a copy and records the concrete pointers, never the values', () => {
    const { value, paths } = redactArguments(args, ['/card/number', '/items/*/token', '/a~1b', '/missing/path']);
    expect(value).toEqual({ card: { number: REDACTED, exp: '12/30' }, items: [{ sku: 'a', token: REDACTED }, { sku: 'b', token: REDACTED }], 'a/b': REDACTED });
    expect(paths).toEqual(['/a~1b', '/card/number', '/items/0/token', '/items/1/token']);
    expect(args.card.number).toBe('4111111111111111');
    expect(JSON.stringify(paths)).not.toContain('4111');
  });

  it('puts untouched redacted values back into a reviewer edit and keeps what the reviewer changed', () => {
    const { value, paths } = redactArguments(args, ['/card/number', '/items/*/token']);
    const edited = JSON.parse(JSON.stringify(value)) as typeof args;
    edited.card.exp = '01/31';
    (edited.items[1] as { token: string }).token = 'new-token';
    expect(restoreRedacted(edited, args, paths)).toEqual({ ...args, card: { number: '4111111111111111', exp: '01/31' }, items: [{ sku: 'a', token: 't1' }, { sku: 'b', token: 'new-token' }] });
  });

  it('accepts only JSON pointers', () => {
    expect(parseRedactPath('/a/~0b/~1c')).toEqual(['a', '~b', '/c']);
    for (const bad of ['a.b', '', '/a/~2', 42 as never]) expect(parseRedactPath(bad)).toBeUndefined();
    expect(() => redactArguments(args, ['card.number'])).toThrow(TypeError);
  });
});
