#!/usr/bin/env node
// Throwaway Ed25519 signing keys for the local suite (demo, manual runs): one per granting
// service, under a git-ignored folder, private keys readable by the user only. Production keys
// come from a secret store through the same variables (GATEHOUSE_SIGNING_KEY_FILE/_ID,
// GATEHOUSE_TRUSTED_KEYS_FILE); nothing here is ever committed or printed.
//   node infra/signing/keys.mjs <dir>                 create what is missing
//   node infra/signing/keys.mjs <dir> --rotate <signer>  new key for approval|ledger|policy; the old one stays trusted
//   node infra/signing/keys.mjs <dir> --retire <keyId>   stop trusting a previous key
//   node infra/signing/keys.mjs <dir> --agent <name> <agentId> <tenant[,tenant]>
//                                                     an agent's claim key (<dir>/agent-<name>.pem, .id),
//                                                     trusted bound to that agent id and those tenants
//   node infra/signing/keys.mjs <dir> --content <tenant>  a tenant's content key (AES-256) in
//                                                     <dir>/content-keys.json: requests and decisions of
//                                                     that tenant are sealed on the approvals topic
// Layout: <dir>/<signer>.pem, <dir>/<signer>.id (current key id, also derivable from the key),
// <dir>/trusted-keys.json (every trusted public key). Needs the built @gatehouse/contracts.
import { createPublicKey, generateKeyPairSync } from 'node:crypto';
import { keyIdOf, newContentKeyEntry } from '@gatehouse/contracts';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';

const SIGNERS = ['approval', 'ledger', 'policy'];
const [dir, flag, value, agentId, tenants] = process.argv.slice(2);
const badAgent = flag === '--agent' && (!/^[\w-]{1,64}$/.test(value ?? '') || !agentId || !tenants);
if (!dir || (flag && !['--rotate', '--retire', '--agent', '--content'].includes(flag)) || (flag && !value) || (flag === '--rotate' && !SIGNERS.includes(value)) || badAgent) {
  process.stderr.write('usage: keys.mjs <dir> [--rotate approval|ledger|policy | --retire <keyId> | --agent <name> <agentId> <tenant[,tenant]> | --content <tenant>]\n');
  process.exit(2);
}
mkdirSync(dir, { recursive: true, mode: 0o700 });
const trustedFile = path.join(dir, 'trusted-keys.json');
const trusted = existsSync(trustedFile) ? JSON.parse(readFileSync(trustedFile, 'utf8')) : [];

function newKey(signer) {
  const { privateKey } = generateKeyPairSync('ed25519');
  // The id is the key's fingerprint, so a service given only the key file derives the same one.
  const keyId = keyIdOf(signer, createPublicKey(privateKey));
  writeFileSync(path.join(dir, `${signer}.pem`), privateKey.export({ type: 'pkcs8', format: 'pem' }), { mode: 0o600 });
  writeFileSync(path.join(dir, `${signer}.id`), `${keyId}\n`, { mode: 0o600 });
  trusted.push({ keyId, signer, publicKey: createPublicKey(privateKey).export({ type: 'spki', format: 'pem' }).toString() });
  return keyId;
}

const made = [];
if (flag === '--content') {
  // One file for the suite's processes; production gives each agent only its own tenants' keys.
  const contentFile = path.join(dir, 'content-keys.json');
  const content = existsSync(contentFile) ? JSON.parse(readFileSync(contentFile, 'utf8')) : [];
  if (!content.some((k) => k.tenant === value)) {
    const entry = newContentKeyEntry(value);
    content.push(entry);
    made.push(entry.keyId);
  }
  writeFileSync(contentFile, `${JSON.stringify(content, null, 2)}\n`, { mode: 0o600 });
}
if (flag === '--agent' && !existsSync(path.join(dir, `agent-${value}.pem`))) {
  // An agent key signs the agent's claims (requests, withdrawals); the services trust it bound to the agent and tenants.
  const { privateKey } = generateKeyPairSync('ed25519');
  const keyId = keyIdOf('agent', createPublicKey(privateKey));
  writeFileSync(path.join(dir, `agent-${value}.pem`), privateKey.export({ type: 'pkcs8', format: 'pem' }), { mode: 0o600 });
  writeFileSync(path.join(dir, `agent-${value}.id`), `${keyId}\n`, { mode: 0o600 });
  const agent = { id: agentId, tenants: tenants.split(',').filter(Boolean) };
  trusted.push({ keyId, signer: 'agent', publicKey: createPublicKey(privateKey).export({ type: 'spki', format: 'pem' }).toString(), agent });
  made.push(keyId);
}
for (const signer of SIGNERS) {
  if (!existsSync(path.join(dir, `${signer}.pem`)) || (flag === '--rotate' && value === signer)) made.push(newKey(signer));
}
let retired = 0;
const kept = flag === '--retire' ? trusted.filter((k) => (k.keyId === value ? ((retired += 1), false) : true)) : trusted;
if (flag === '--retire') {
  const current = SIGNERS.map((s) => readFileSync(path.join(dir, `${s}.id`), 'utf8').trim());
  if (current.includes(value)) {
    process.stderr.write(`keys: ${value} is a current signing key; rotate it first\n`);
    process.exit(2);
  }
}
writeFileSync(trustedFile, `${JSON.stringify(kept, null, 2)}\n`, { mode: 0o644 });
process.stdout.write(`keys: ${made.length ? `created ${made.join(', ')}` : 'signing keys present'}${retired ? `; retired ${value}` : ''}; ${kept.length} trusted\n`);
