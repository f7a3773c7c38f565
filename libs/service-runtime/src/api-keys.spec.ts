import { describe, expect, it } from '@jest/globals';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { GatehouseError } from '@gatehouse/contracts';
import { z } from 'zod';
import { apiKeyDigest, ApiKeySha256, bearerCredential, findByApiKey, parsePrincipalList, principalListText } from './api-keys.js';

const Operator = z.strictObject({ id: z.string().min(1), role: z.string().min(1), apiKeySha256: ApiKeySha256 });
const digest = 'a'.repeat(64);

function configError(fn: () => unknown): { code: string; message: string; details: unknown } {
  try {
    fn();
  } catch (error) {
    if (error instanceof GatehouseError) return { code: error.code, message: error.message, details: error.details };
  }
  throw new Error('expected a GatehouseError');
}

describe('principal lists from configuration', () => {
  it('parses a list, and none when the value is absent or blank', () => {
    expect(parsePrincipalList(JSON.stringify([{ id: 'op:ada', role: 'admin', apiKeySha256: digest }]), 'X_OPERATORS', 'operator', Operator)).toEqual([{ id: 'op:ada', role: 'admin', apiKeySha256: digest }]);
    expect(parsePrincipalList(undefined, 'X_OPERATORS', 'operator', Operator)).toEqual([]);
    expect(parsePrincipalList('  ', 'X_OPERATORS', 'operator', Operator)).toEqual([]);
  });

  it('refuses bad JSON and bad items with CONFIG.INVALID naming the variable and the field, never a value', () => {
    expect(configError(() => parsePrincipalList('[{', 'X_OPERATORS', 'operator', Operator))).toEqual({ code: 'CONFIG.INVALID', message: 'X_OPERATORS must be a JSON array of operators', details: { variable: 'X_OPERATORS' } });
    const secretish = 'not-a-digest-but-maybe-a-raw-key';
    const bad = configError(() => parsePrincipalList(JSON.stringify([{ id: 'op:ada', role: 'admin', apiKeySha256: secretish }]), 'X_OPERATORS', 'operator', Operator));
    expect(bad.message).toBe('X_OPERATORS has an invalid operator field "0.apiKeySha256": must be the hex sha-256 of the API key');
    expect(JSON.stringify(bad)).not.toContain(secretish);
  });

  it('reads the list from the file a *_FILE variable names, which wins over the variable', () => {
    const dir = mkdtempSync(path.join(tmpdir(), 'gh-principals-'));
    try {
      const file = path.join(dir, 'operators.json');
      writeFileSync(file, '[]');
      expect(principalListText({ X_OPERATORS: '[1]', X_OPERATORS_FILE: file }, 'X_OPERATORS', 'X_OPERATORS_FILE')).toEqual({ text: '[]', from: 'X_OPERATORS_FILE' });
      expect(principalListText({ X_OPERATORS: '[1]' }, 'X_OPERATORS', 'X_OPERATORS_FILE')).toEqual({ text: '[1]', from: 'X_OPERATORS' });
      expect(configError(() => principalListText({ X_OPERATORS_FILE: path.join(dir, 'missing.json') }, 'X_OPERATORS', 'X_OPERATORS_FILE')).message).toBe('X_OPERATORS_FILE names a file that cannot be read');
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe('API keys', () => {
  it('finds the principal of a bearer key by its digest, and nobody for another key or header', () => {
    const principals = [{ id: 'op:ada', role: 'admin', keyDigest: apiKeyDigest('ada-key-0123456789') }];
    expect(findByApiKey(bearerCredential('Bearer ada-key-0123456789')!, principals)?.id).toBe('op:ada');
    expect(findByApiKey(bearerCredential('Bearer bob-key-0123456789')!, principals)).toBeUndefined();
    expect(bearerCredential('Basic ada-key-0123456789')).toBeUndefined();
    expect(bearerCredential('Bearer short')).toBeUndefined();
  });
});
