import { describe, expect, it } from '@jest/globals';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { SIGNING_ENV, trustedEntryOf } from '@gatehouse/contracts';
import { TEST_KEYS } from '@gatehouse/contracts/testing';
import { apiKeyDigest } from '@gatehouse/service-runtime';
import { EXPORT_ENV, exportOptionsFromEnv } from './export-config.js';

const digest = (key: string) => apiKeyDigest(key).toString('hex');

describe('export configuration: readers and operators', () => {
  it('reads readers with their tenants, and operators, by key digest only', () => {
    const options = exportOptionsFromEnv({
      [EXPORT_ENV.readers]: JSON.stringify([
        { id: 'siem:acme', role: 'siem', tenants: ['acme'], apiKeySha256: digest('rk_acme_reader_key') },
        { id: 'siem:all', role: 'siem', tenants: '*', apiKeySha256: digest('rk_every_tenant_key') },
      ]),
      [EXPORT_ENV.operators]: JSON.stringify([{ id: 'user:olga', role: 'ops', apiKeySha256: digest('ok_operator_key_1') }]),
    });
    expect(options.readers?.map((r) => [r.id, r.tenants === '*' ? '*' : [...r.tenants]])).toEqual([
      ['siem:acme', ['acme']],
      ['siem:all', '*'],
    ]);
    expect(options.readers?.[0]?.keyDigest.equals(apiKeyDigest('rk_acme_reader_key'))).toBe(true);
    expect(options.operators?.map((o) => o.id)).toEqual(['user:olga']);
  });

  it('configures no reader when none is given: every query is refused', () => {
    expect(exportOptionsFromEnv({}).readers).toEqual([]);
  });

  it.each([
    ['not JSON', 'rk_[', 'must be a JSON array of readers'],
    ['a key instead of its digest', JSON.stringify([{ id: 'a', role: 'r', tenants: '*', apiKeySha256: 'rk_plain_secret_key' }]), '"0.apiKeySha256"'],
    ['no tenants', JSON.stringify([{ id: 'a', role: 'r', apiKeySha256: digest('k') }]), '"0.tenants"'],
    ['an empty tenant list', JSON.stringify([{ id: 'a', role: 'r', tenants: [], apiKeySha256: digest('k') }]), '"0.tenants"'],
    ['an unknown field', JSON.stringify([{ id: 'a', role: 'r', tenants: '*', apiKeySha256: digest('k'), admin: true }]), 'reader field'],
  ])('refuses %s as CONFIG.INVALID naming the variable, never the value', (_what, value, says) => {
    let thrown: unknown;
    try {
      exportOptionsFromEnv({ [EXPORT_ENV.readers]: value });
    } catch (error) {
      thrown = error;
    }
    expect(thrown).toMatchObject({ code: 'CONFIG.INVALID', details: { variable: EXPORT_ENV.readers } });
    expect((thrown as Error).message).toContain(says);
    expect((thrown as Error).message).not.toContain('rk_');
  });

  it('reads the readers from a mounted file, and refuses a file it cannot read', () => {
    const dir = mkdtempSync(path.join(tmpdir(), 'audit-readers-'));
    try {
      const file = path.join(dir, 'readers.json');
      writeFileSync(file, JSON.stringify([{ id: 'siem:file', role: 'siem', tenants: ['acme'], apiKeySha256: digest('rk_from_a_file_key') }]));
      // The file wins over the variable, as for every mounted secret.
      expect(exportOptionsFromEnv({ [EXPORT_ENV.readersFile]: file, [EXPORT_ENV.readers]: '[]' }).readers?.map((r) => r.id)).toEqual(['siem:file']);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
    expect(() => exportOptionsFromEnv({ [EXPORT_ENV.readersFile]: '/nonexistent/readers.json' })).toThrow(expect.objectContaining({ code: 'CONFIG.INVALID', details: { variable: EXPORT_ENV.readersFile } }));
  });
});

describe('export configuration: source verification', () => {
  it('reads the trusted keys when configured, and waits 3 s for a checkpoint by default', () => {
    expect(exportOptionsFromEnv({})).toMatchObject({ verifyWaitMs: 3_000 });
    expect(exportOptionsFromEnv({}).keyring).toBeUndefined();
    const keyring = exportOptionsFromEnv({ [SIGNING_ENV.trustedKeys]: JSON.stringify([trustedEntryOf(TEST_KEYS.approval)]) }).keyring;
    expect([...(keyring?.keys.keys() ?? [])]).toEqual([TEST_KEYS.approval.keyId]);
    expect(exportOptionsFromEnv({ [EXPORT_ENV.verifyWaitMs]: '0' }).verifyWaitMs).toBe(0);
    expect(() => exportOptionsFromEnv({ [EXPORT_ENV.verifyWaitMs]: '-1' })).toThrow(expect.objectContaining({ code: 'CONFIG.INVALID' }));
    expect(() => exportOptionsFromEnv({ [SIGNING_ENV.trustedKeys]: 'not json' })).toThrow(expect.objectContaining({ code: 'CONFIG.INVALID' }));
  });
});
