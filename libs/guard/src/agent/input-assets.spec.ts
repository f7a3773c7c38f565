import { describe, expect, it } from '@jest/globals';
import { judgeAssetReference, normalizeAssetOrigins } from './input-assets.js';

const origins = normalizeAssetOrigins(['https://img.example.com', 'http://localhost:8080/'], 'test');

describe('input asset references', () => {
  it.each([
    ['a listed https origin', 'https://img.example.com/cat.png'],
    ['a listed origin given with a trailing slash', 'http://localhost:8080/x'],
    ['a data URL', 'data:image/png;base64,iVBORw0KGgo='],
    ['raw base64', 'iVBORw0KGgoAAAANSUhEUg=='],
    ['binary data', new Uint8Array([1, 2, 3])],
  ])('allows %s', (_what, value) => {
    expect(judgeAssetReference(value, origins)).toEqual({ allowed: true });
  });

  it.each([
    ['an unlisted origin', 'https://cdn.evil.example/cat.png', 'ASSET.ORIGIN_NOT_ALLOWED'],
    ['the right host on another port', 'https://img.example.com:8443/cat.png', 'ASSET.ORIGIN_NOT_ALLOWED'],
    ['credentials', 'https://u:p@img.example.com/cat.png', 'ASSET.CREDENTIALS_IN_URL'],
    ['ftp', 'ftp://img.example.com/cat.png', 'ASSET.SCHEME_NOT_ALLOWED'],
    ['file', new URL('file:///etc/passwd'), 'ASSET.SCHEME_NOT_ALLOWED'],
    ['a scheme hidden in a base64 data URL', 'data:image/jpeg;base64,ftp://img.example.com/a.png', 'ASSET.SCHEME_NOT_ALLOWED'],
  ])('refuses %s', (_what, value, code) => {
    expect(judgeAssetReference(value, origins)).toEqual({ allowed: false, code });
  });

  it('refuses origin entries that are not bare http(s) origins', () => {
    expect(() => normalizeAssetOrigins(['https://img.example.com/path'], 'test')).toThrow(TypeError);
    expect(() => normalizeAssetOrigins(['ftp://img.example.com'], 'test')).toThrow(TypeError);
    expect(() => normalizeAssetOrigins(['not a url'], 'test')).toThrow(TypeError);
  });
});
