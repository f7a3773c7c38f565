import { describe, expect, it } from '@jest/globals';
import { declaredEgressWithin, egressDomainAllowed, hostMatches, normalizeHost, validateEgressPatterns } from './hosts.js';

describe('validateEgressPatterns', () => {
  it('normalizes case, a trailing dot, IPv6 brackets and IDN, and drops duplicates', () => {
    expect(
      validateEgressPatterns(
        ['API.Example.com', 'api.example.com.', '*.Example.COM.', '10.0.0.1', '[2001:DB8:0:0::1]', '::1', 'localhost', 'bücher.example'],
        'test',
      ),
    ).toEqual(['api.example.com', '*.example.com', '10.0.0.1', '2001:db8::1', '::1', 'localhost', 'xn--bcher-kva.example']);
  });

  it('returns a frozen list', () => {
    expect(Object.isFrozen(validateEgressPatterns(['a.example.com'], 'test'))).toBe(true);
  });

  it.each([
    ['an empty string', ''],
    ['a URL', 'https://api.example.com'],
    ['a URL with credentials', 'https://user:pw@api.example.com'],
    ['a host with a port', 'api.example.com:443'],
    ['a bracketed IPv6 with a port', '[::1]:8080'],
    ['a path', 'api.example.com/v1'],
    ['a query', 'api.example.com?x=1'],
    ['a bare star', '*'],
    ['a star and dot only', '*.'],
    ['a wildcard over one label', '*.com'],
    ['an inner wildcard', 'api.*.example.com'],
    ['a double wildcard', '*.*.example.com'],
    ['a partial-label wildcard', '*api.example.com'],
    ['a wildcard in front of an IP', '*.10.0.0.1'],
    ['whitespace', ' api.example.com'],
    ['an empty label', 'api..example.com'],
    ['a label starting with a hyphen', '-api.example.com'],
    ['a shorthand IPv4 the URL parser would rewrite', '127.1'],
    ['a hex IPv4', '0x7f.0.0.1'],
    ['an IPv6 zone id', 'fe80::1%eth0'],
    ['brackets without an IPv6 address', '[api.example.com]'],
  ])('refuses %s', (_what, pattern) => {
    expect(() => validateEgressPatterns([pattern], 'conn: egress')).toThrow(TypeError);
  });

  it('names where and which entry is wrong, without echoing a URL that carries credentials', () => {
    expect(() => validateEgressPatterns(['ok.example.com', 'api.example.com:443'], 'conn: egress')).toThrow('conn: egress[1] ("api.example.com:443") must not carry a port');
    let message = '';
    try {
      validateEgressPatterns(['https://user:hunter2@api.example.com'], 'conn: egress');
    } catch (error) {
      message = (error as Error).message;
    }
    expect(message).toContain('conn: egress[0]');
    expect(message).not.toContain('hunter2');
  });

  it('refuses a non-array and a non-string entry', () => {
    expect(() => validateEgressPatterns('api.example.com' as unknown as string[], 'test')).toThrow(TypeError);
    expect(() => validateEgressPatterns([42 as unknown as string], 'test')).toThrow('must be a string');
  });
});

describe('hostMatches', () => {
  it.each([
    ['*.example.com', 'a.example.com', true],
    ['*.example.com', 'a.b.example.com', true],
    ['*.example.com', 'example.com', false],
    ['*.example.com', 'badexample.com', false],
    ['*.example.com', 'a.example.com.evil.test', false],
    ['api.example.com', 'API.EXAMPLE.COM.', true],
    ['api.example.com', 'x.api.example.com', false],
    ['::1', '[::1]', true],
    ['2001:db8::1', '[2001:db8:0:0:0:0:0:1]', true],
    ['127.0.0.1', '127.0.0.2', false],
    ['*.example.com', '', false],
  ])('%s against %s is %s', (pattern, host, expected) => {
    expect(hostMatches(pattern, host)).toBe(expected);
  });

  it('never lets a wildcard match an IP address', () => {
    expect(hostMatches('*.0.1', '10.0.0.1')).toBe(false);
  });

  it('egressDomainAllowed is true when any pattern matches', () => {
    expect(egressDomainAllowed('a.example.com', ['other.test', '*.example.com'])).toBe(true);
    expect(egressDomainAllowed('example.com', ['other.test', '*.example.com'])).toBe(false);
    expect(egressDomainAllowed('example.com', [])).toBe(false);
  });

  it('normalizeHost strips brackets and the trailing dot and compresses IPv6', () => {
    expect(normalizeHost('[2001:DB8::0:1]')).toBe('2001:db8::1');
    expect(normalizeHost('Example.COM.')).toBe('example.com');
  });
});

describe('declaredEgressWithin', () => {
  it('returns nothing when every declared pattern is covered', () => {
    expect(declaredEgressWithin(['api.example.com', 'a.b.example.com', '*.eu.example.com', '*.example.com'], ['*.example.com'])).toEqual([]);
    expect(declaredEgressWithin(['api.example.com'], ['api.example.com'])).toEqual([]);
    expect(declaredEgressWithin([], [])).toEqual([]);
  });

  it('returns the declared patterns outside the allowlist', () => {
    expect(declaredEgressWithin(['api.example.com', 'evil.test', 'example.com'], ['*.example.com'])).toEqual(['evil.test', 'example.com']);
  });

  it('does not let exact hosts cover a wildcard', () => {
    expect(declaredEgressWithin(['*.example.com'], ['example.com', 'a.example.com'])).toEqual(['*.example.com']);
  });

  it('does not let a narrower wildcard cover a broader one', () => {
    expect(declaredEgressWithin(['*.example.com'], ['*.eu.example.com'])).toEqual(['*.example.com']);
  });

  it('does not confuse a suffix that is not on a label boundary', () => {
    expect(declaredEgressWithin(['*.badexample.com'], ['*.example.com'])).toEqual(['*.badexample.com']);
  });
});
