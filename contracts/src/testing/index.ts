// Signing keys for tests: fresh Ed25519 pairs per process, never written anywhere.
import { generateKeyPairSync } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { agentKeyFromPem } from '../claims.js';
import { AGENT_KEY_ENV, SIGNING_ENV } from '../signing-config.js';
import { type AgentKey, createKeyring, type Keyring, type Signer, type SigningKey, signingKeyFromPem, trustedEntryOf } from '../signing.js';

/** A fresh Ed25519 signing key for `signer`. */
export function testSigningKey(signer: Signer, keyId = `${signer}-test-${Math.random().toString(36).slice(2, 8)}`): SigningKey {
  const pem = generateKeyPairSync('ed25519').privateKey.export({ type: 'pkcs8', format: 'pem' }).toString();
  return signingKeyFromPem(keyId, signer, pem);
}

/** A fresh Ed25519 agent key bound to `agentId` and `tenants`. */
export function testAgentKey(agentId: string, tenants: readonly string[], keyId = `agent-test-${Math.random().toString(36).slice(2, 8)}`): AgentKey {
  const pem = generateKeyPairSync('ed25519').privateKey.export({ type: 'pkcs8', format: 'pem' }).toString();
  return agentKeyFromPem(keyId, { id: agentId, tenants: [...tenants] }, pem);
}

/** A keyring trusting exactly the public halves of `keys`. */
export function testKeyring(...keys: (SigningKey | AgentKey)[]): Keyring {
  return createKeyring(keys.map(trustedEntryOf));
}

/**
 * The agent key of a whole test process: agent `agent:billing`, for the tenants the tests use.
 * A test of another agent or tenant makes its own with `testAgentKey`.
 */
export const TEST_AGENT_KEY: AgentKey = testAgentKey('agent:billing', ['acme', 'globex', 'initech', 'default'], 'agent-test');

/** One key per signer for a whole test process, and the keyring trusting them. */
export const TEST_KEYS: Readonly<Record<Signer, SigningKey>> = Object.freeze({
  approval: testSigningKey('approval', 'approval-test'),
  ledger: testSigningKey('ledger', 'ledger-test'),
  policy: testSigningKey('policy', 'policy-test'),
});
export const TEST_KEYRING: Keyring = testKeyring(TEST_KEYS.approval, TEST_KEYS.ledger, TEST_KEYS.policy, TEST_AGENT_KEY);

/**
 * The environment a granting service reads its keys from (`signingKeyFromEnv`, `keyringFromEnv`),
 * with `key` written to a private temp file; `trusted` defaults to every TEST_KEYS key. Call
 * `remove` when done. The test agent key is trusted too, so services count its claims.
 */
export function signingEnv(key: SigningKey, trusted: readonly (SigningKey | AgentKey)[] = [...Object.values(TEST_KEYS), TEST_AGENT_KEY]): { env: Record<string, string>; remove: () => void } {
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

/** The environment an agent process reads its claim key from (`agentKeyFromEnv`), the key in a private temp file. */
export function agentKeyEnv(key: AgentKey = TEST_AGENT_KEY): { env: Record<string, string>; remove: () => void } {
  const dir = mkdtempSync(path.join(tmpdir(), 'gatehouse-agent-key-'));
  const file = path.join(dir, `${key.keyId}.pem`);
  writeFileSync(file, key.privateKey.export({ type: 'pkcs8', format: 'pem' }).toString(), { mode: 0o600 });
  return {
    env: { [AGENT_KEY_ENV.keyFile]: file, [AGENT_KEY_ENV.keyId]: key.keyId, [AGENT_KEY_ENV.agentId]: key.agent.id, [AGENT_KEY_ENV.tenants]: key.agent.tenants.join(',') },
    remove: () => rmSync(dir, { recursive: true, force: true }),
  };
}

/** A seeded source of numbers in [0, 1): the same sequence for the same seed on every run. */
export type Random = () => number;

/** mulberry32: tiny and seedable: the same random histories, corpora and cases on every run for a seed. */
export function seeded(seed: number): Random {
  let state = seed >>> 0;
  return () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}
