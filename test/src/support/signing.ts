import { type Signer, SIGNING_ENV, trustedEntryOf } from '@gatehouse/contracts';
import { agentKeyEnv, signingEnv, TEST_AGENT_KEY, TEST_KEYS } from '@gatehouse/contracts/testing';

// Processes started by the system tests trust this test process's keys; a granting service
// signs with its own. The private keys live in temp files removed when the process exits.
const SIGNERS: Readonly<Record<string, Signer>> = { approval: 'approval', 'idempotency-ledger': 'ledger', policy: 'policy' };
const written: (() => void)[] = [];
process.once('exit', () => {
  for (const remove of written) remove();
});

/** What every child process needs to verify grants and claims: the test keys' public halves, the test agent's among them. */
export function trustedKeysEnv(): Record<string, string> {
  return { [SIGNING_ENV.trustedKeys]: JSON.stringify([...Object.values(TEST_KEYS), TEST_AGENT_KEY].map(trustedEntryOf)) };
}

let agentKey: Record<string, string> | undefined;
/** The test agent's claim key (`agentKeyFromEnv`), for agent processes: agent `agent:billing`, bound to the test tenants. */
export function agentClaimEnv(): Record<string, string> {
  if (!agentKey) {
    const keys = agentKeyEnv(TEST_AGENT_KEY);
    written.push(keys.remove);
    agentKey = keys.env;
  }
  return agentKey;
}

/** The signing key of the service `name` (if it grants anything) and the trusted keys. */
export function serviceSigningEnv(name: string): Record<string, string> {
  const signer = SIGNERS[name];
  if (!signer) return trustedKeysEnv();
  const keys = signingEnv(TEST_KEYS[signer]);
  written.push(keys.remove);
  return keys.env;
}
