import { createPublicKey } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { GatehouseError } from './errors.js';
import { agentKeyFromPem } from './claims.js';
import { contentKeysFromEnv } from './sealing.js';
import { type AgentKey, createKeyring, keyIdOf, type Keyring, type Signer, type SigningKey, signingKeyFromPem, type TrustedKeyEntry } from './signing.js';

/** Environment variables of signing and verification. Keys come from files or the environment, never from code. */
export const SIGNING_ENV = {
  /** JSON array of `{ keyId, signer, publicKey }` (SPKI PEM): the keys every fold trusts. */
  trustedKeys: 'GATEHOUSE_TRUSTED_KEYS',
  /** A file holding the same JSON; wins over the variable. */
  trustedKeysFile: 'GATEHOUSE_TRUSTED_KEYS_FILE',
  /** A granting service's private key (PKCS#8 PEM, Ed25519), and the id verifiers know it by (default: `keyIdOf`). */
  signingKeyFile: 'GATEHOUSE_SIGNING_KEY_FILE',
  signingKeyId: 'GATEHOUSE_SIGNING_KEY_ID',
} as const;

function missing(variable: string, what: string): GatehouseError {
  return new GatehouseError('CONFIG.INVALID', `${variable} ${what}`, { category: 'validation', details: { variable } });
}

function readSecret(variable: string, file: string): string {
  try {
    return readFileSync(file, 'utf8');
  } catch {
    throw missing(variable, 'names a file that cannot be read');
  }
}

/**
 * The keyring from the environment. Required: without trusted keys no grant could ever count,
 * so a reader refuses to start rather than run with a fold that silently denies everything.
 */
export function keyringFromEnv(env: NodeJS.ProcessEnv = process.env): Keyring {
  const file = env[SIGNING_ENV.trustedKeysFile];
  const variable = file ? SIGNING_ENV.trustedKeysFile : SIGNING_ENV.trustedKeys;
  const raw = file ? readSecret(variable, file) : env[SIGNING_ENV.trustedKeys];
  if (raw === undefined || raw.trim() === '') throw missing(SIGNING_ENV.trustedKeysFile, 'or GATEHOUSE_TRUSTED_KEYS must list the trusted public keys');
  let entries: unknown;
  try {
    entries = JSON.parse(raw);
  } catch {
    throw missing(variable, 'must be a JSON array of { keyId, signer, publicKey }');
  }
  if (!Array.isArray(entries)) throw missing(variable, 'must be a JSON array of { keyId, signer, publicKey }');
  // The tenants' content keys travel with the trusted keys: whoever folds approvals opens what it may.
  return createKeyring(entries as TrustedKeyEntry[], contentKeysFromEnv(env));
}

/**
 * Refuses a signing key its own keyring does not trust: every event the service wrote would be
 * ignored by every fold, its own included. A misconfiguration caught at start-up, not at a grant.
 */
export function assertSelfTrusted(key: SigningKey, keyring: Keyring): void {
  const trusted = keyring.keys.get(key.keyId);
  const same = trusted !== undefined && trusted.signer === key.signer && trusted.publicKey.equals(createPublicKey(key.privateKey));
  if (!same) throw missing(SIGNING_ENV.trustedKeysFile, `must list the public key of ${SIGNING_ENV.signingKeyId} for the ${key.signer} signer`);
}

/** A granting service's signing key from the environment; required (a grant it cannot sign would not count). */
export function signingKeyFromEnv(signer: Signer, env: NodeJS.ProcessEnv = process.env): SigningKey {
  const file = env[SIGNING_ENV.signingKeyFile];
  if (!file) throw missing(SIGNING_ENV.signingKeyFile, `must name the ${signer} service's Ed25519 private key (PKCS#8 PEM)`);
  const pem = readSecret(SIGNING_ENV.signingKeyFile, file);
  // Without a configured id the key goes by its fingerprint (what infra/signing/keys.mjs names it).
  const keyId = env[SIGNING_ENV.signingKeyId] || keyIdOf(signer, createPublicKey(signingKeyFromPem('pending', signer, pem).privateKey));
  return signingKeyFromPem(keyId, signer, pem);
}

/** Environment variables of an agent process's claim key (see `claims.ts`). */
export const AGENT_KEY_ENV = {
  /** The agent's Ed25519 private key (PKCS#8 PEM); its public half is in the services' trusted keys. */
  keyFile: 'GATEHOUSE_AGENT_KEY_FILE',
  /** The id the services know the key by (default: `keyIdOf('agent', publicKey)`). */
  keyId: 'GATEHOUSE_AGENT_KEY_ID',
  /** The agent's id, as its trusted-key entry binds it. */
  agentId: 'GATEHOUSE_AGENT_ID',
  /** Comma-separated tenants the agent acts for, as its trusted-key entry binds them. */
  tenants: 'GATEHOUSE_AGENT_TENANTS',
} as const;

/** An agent's claim key from the environment; required where an agent asks for approvals. */
export function agentKeyFromEnv(env: NodeJS.ProcessEnv = process.env): AgentKey {
  const file = env[AGENT_KEY_ENV.keyFile];
  if (!file) throw missing(AGENT_KEY_ENV.keyFile, "must name the agent's Ed25519 private key (PKCS#8 PEM)");
  const agentId = env[AGENT_KEY_ENV.agentId];
  if (!agentId) throw missing(AGENT_KEY_ENV.agentId, "must name the agent's id");
  const tenants = (env[AGENT_KEY_ENV.tenants] ?? '').split(',').map((t) => t.trim()).filter((t) => t.length > 0);
  if (tenants.length === 0) throw missing(AGENT_KEY_ENV.tenants, 'must list the tenants the agent acts for');
  const pem = readSecret(AGENT_KEY_ENV.keyFile, file);
  const binding = { id: agentId, tenants };
  const keyId = env[AGENT_KEY_ENV.keyId] || keyIdOf('agent', createPublicKey(agentKeyFromPem('pending', binding, pem).privateKey));
  return agentKeyFromPem(keyId, binding, pem);
}
