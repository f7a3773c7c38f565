// Signing keys for tests: fresh Ed25519 pairs per process, never written anywhere.
import { generateKeyPairSync } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { SIGNING_ENV } from '../signing-config.js';
import { createKeyring, type Keyring, type Signer, type SigningKey, signingKeyFromPem, trustedEntryOf } from '../signing.js';

/** A fresh Ed25519 signing key for `signer`. */
export function testSigningKey(signer: Signer, keyId = `${signer}-test-${Math.random().toString(36).slice(2, 8)}`): SigningKey {
  const pem = generateKeyPairSync('ed25519').privateKey.export({ type: 'pkcs8', format: 'pem' }).toString();
  return signingKeyFromPem(keyId, signer, pem);
}

/** A keyring trusting exactly the public halves of `keys`. */
export function testKeyring(...keys: SigningKey[]): Keyring {
  return createKeyring(keys.map(trustedEntryOf));
}

/** One key per signer for a whole test process, and the keyring trusting them. */
export const TEST_KEYS: Readonly<Record<Signer, SigningKey>> = Object.freeze({
  approval: testSigningKey('approval', 'approval-test'),
  ledger: testSigningKey('ledger', 'ledger-test'),
  policy: testSigningKey('policy', 'policy-test'),
});
export const TEST_KEYRING: Keyring = testKeyring(TEST_KEYS.approval, TEST_KEYS.ledger, TEST_KEYS.policy);

/**
 * The environment a granting service reads its keys from (`signingKeyFromEnv`, `keyringFromEnv`),
 * with `key` written to a private temp file; `trusted` defaults to every TEST_KEYS key. Call
 * `remove` when done.
 */
export function signingEnv(key: SigningKey, trusted: readonly SigningKey[] = Object.values(TEST_KEYS)): { env: Record<string, string>; remove: () => void } {
  const dir = mkdtempSync(path.join(tmpdir(), 'gatehouse-keys-'));
  const file = path.join(dir, `${key.keyId}.pem`);
  writeFileSync(file, key.privateKey.export({ type: 'pkcs8', format: 'pem' }).toString(), { mode: 0o600 });
  return {
    env: {
      [SIGNING_ENV.signingKeyFile]: file,
      [SIGNING_ENV.signingKeyId]: key.keyId,
      [SIGNING_ENV.trustedKeys]: JSON.stringify(trusted.map(trustedEntryOf)),
    },
    remove: () => rmSync(dir, { recursive: true, force: true }),
  };
}
