import { createHash } from 'node:crypto';
import { assertSelfTrusted, GatehouseError, type Keyring, keyringFromEnv, type SigningKey, signingKeyFromEnv } from '@gatehouse/contracts';
import { principalListText } from '@gatehouse/service-runtime';
import { type LedgerAgent, parseLedgerAgents } from './auth/agent-auth.js';
import { DEFAULT_CHECKPOINT_INTERVAL_MS } from '@gatehouse/ledger-projection';

/** Environment variables of the ledger service (besides the runtime's GATEHOUSE_*). */
export const LEDGER_ENV = {
  /**
   * The agents that may use the ledger, `[{ id, apiKeySha256, tenants: [...] }]` (or a file of it:
   * `agentsFile`). None: every agent request is refused (401).
   */
  agents: 'GATEHOUSE_LEDGER_AGENTS',
  agentsFile: 'GATEHOUSE_LEDGER_AGENTS_FILE',
  /** Most keys one agent may hold pending or leave ambiguous at once (default 10000). */
  maxPendingKeys: 'GATEHOUSE_LEDGER_MAX_PENDING_KEYS',
  /** Most budgets one agent may create (default 1000). */
  maxBudgets: 'GATEHOUSE_LEDGER_MAX_BUDGETS',
  /** Comma-separated `id:role:token` entries; the only way to resolve an ambiguous key. None: every resolution is refused. */
  operatorTokens: 'GATEHOUSE_LEDGER_OPERATOR_TOKENS',
  /** How long a writer waits for its own verdict, ms (default 5000). Past it: 503 LEDGER.UNAVAILABLE. */
  decisionDeadlineMs: 'GATEHOUSE_LEDGER_DECISION_DEADLINE_MS',
  /**
   * How long a completed key is kept for replay, ms; then the service appends its expiry and
   * forgets it (a later call with the key runs again). Unset: completed keys are kept forever.
   */
  retainCompletedMs: 'GATEHOUSE_LEDGER_RETAIN_COMPLETED_MS',
  /** How often the service looks for completed keys past the retention, ms (default 60000). */
  expirySweepMs: 'GATEHOUSE_LEDGER_EXPIRY_SWEEP_MS',
  /**
   * Time between two checkpoints of the ledger's state into its topic, ms (default 3600000, one
   * hour). They let the topic delete records by time (it must keep two intervals or two days, whichever is longer); 0
   * writes none, and then the topic must keep every record for ever.
   */
  checkpointIntervalMs: 'GATEHOUSE_LEDGER_CHECKPOINT_MS',
} as const;

/** An operator allowed to resolve ambiguous keys. Only a digest of the token is kept. */
export interface OperatorCredential {
  readonly id: string;
  readonly role: string;
  readonly tokenDigest: Buffer;
}

export interface LedgerOptions {
  readonly operators: readonly OperatorCredential[];
  /** Who may call the agent routes, each for its tenants. */
  readonly agents: readonly LedgerAgent[];
  /** Most pending or ambiguous keys per agent; a reservation past it is refused (429 LEDGER.PENDING_LIMIT). */
  readonly maxPendingKeys: number;
  /** Most budgets per agent; a consumption that would create one more is refused (429 LEDGER.BUDGET_LIMIT). */
  readonly maxBudgets: number;
  readonly decisionDeadlineMs: number;
  /** Completed keys past this age (ms, by log time) are expired; undefined: kept forever. */
  readonly retainCompletedMs?: number;
  /** How often expired keys are looked for, ms. */
  readonly expirySweepMs?: number;
  /** Time between two checkpoints of the state into the log, ms; 0: none. */
  readonly checkpointIntervalMs: number;
  /** Signs every ledger event (GATEHOUSE_SIGNING_KEY_FILE, GATEHOUSE_SIGNING_KEY_ID). */
  readonly signingKey: SigningKey;
  /** The ledger keys the fold trusts (GATEHOUSE_TRUSTED_KEYS_FILE): this service's own, and others' during a rotation. */
  readonly keyring: Keyring;
}

const MIN_TOKEN_LENGTH = 16;

/** The digest operator tokens are compared by (fixed length, so the comparison is constant-time). */
export function tokenDigest(token: string): Buffer {
  return createHash('sha256').update(token, 'utf8').digest();
}

function invalid(variable: string, expectation: string): GatehouseError {
  return new GatehouseError('CONFIG.INVALID', `${variable} ${expectation}`, { category: 'validation', details: { variable } });
}

/** Parses `id:role:token,...`; a malformed entry is named by position, never by content. */
export function parseOperatorTokens(raw: string | undefined): OperatorCredential[] {
  if (raw === undefined || raw.trim() === '') return [];
  return raw.split(',').map((entry, index) => {
    const [id, role, ...rest] = entry.trim().split(':');
    const token = rest.join(':');
    if (!id || !role || !/^[\w.@-]{1,128}$/.test(id) || !/^[\w.-]{1,64}$/.test(role)) {
      throw invalid(LEDGER_ENV.operatorTokens, `entry ${index + 1} must be id:role:token`);
    }
    if (token.length < MIN_TOKEN_LENGTH) throw invalid(LEDGER_ENV.operatorTokens, `entry ${index + 1} needs a token of at least ${MIN_TOKEN_LENGTH} characters`);
    return { id, role, tokenDigest: tokenDigest(token) };
  });
}

export const DEFAULT_MAX_PENDING_KEYS = 10_000;
export const DEFAULT_MAX_BUDGETS = 1_000;

function bound(env: NodeJS.ProcessEnv, variable: string, fallback: number): number {
  const raw = env[variable];
  const value = raw === undefined || raw === '' ? fallback : Number(raw);
  if (!Number.isSafeInteger(value) || value < 1 || value > 10_000_000) throw invalid(variable, 'must be a whole number between 1 and 10000000');
  return value;
}

/** Reads the ledger's own settings; a bad value is a typed error naming the variable. */
export function ledgerOptionsFromEnv(env: NodeJS.ProcessEnv = process.env): LedgerOptions {
  const deadline = Number(env[LEDGER_ENV.decisionDeadlineMs] ?? 5_000);
  if (!Number.isInteger(deadline) || deadline < 1 || deadline > 60_000) {
    throw invalid(LEDGER_ENV.decisionDeadlineMs, 'must be a whole number of milliseconds between 1 and 60000');
  }
  const retain = env[LEDGER_ENV.retainCompletedMs];
  const retainCompletedMs = retain === undefined || retain === '' ? undefined : Number(retain);
  // At least a second: a shorter retention would expire keys while their callers still retry.
  if (retainCompletedMs !== undefined && (!Number.isSafeInteger(retainCompletedMs) || retainCompletedMs < 1_000)) {
    throw invalid(LEDGER_ENV.retainCompletedMs, 'must be a whole number of milliseconds, at least 1000');
  }
  const sweep = Number(env[LEDGER_ENV.expirySweepMs] ?? 60_000);
  if (!Number.isInteger(sweep) || sweep < 100 || sweep > 86_400_000) throw invalid(LEDGER_ENV.expirySweepMs, 'must be a whole number of milliseconds between 100 and 86400000');
  const checkpoint = env[LEDGER_ENV.checkpointIntervalMs];
  const checkpointIntervalMs = checkpoint === undefined || checkpoint === '' ? DEFAULT_CHECKPOINT_INTERVAL_MS : Number(checkpoint);
  if (!Number.isSafeInteger(checkpointIntervalMs) || (checkpointIntervalMs !== 0 && (checkpointIntervalMs < 1_000 || checkpointIntervalMs > 7 * 86_400_000))) {
    throw invalid(LEDGER_ENV.checkpointIntervalMs, 'must be 0 or a whole number of milliseconds between 1000 and 604800000');
  }
  const signingKey = signingKeyFromEnv('ledger', env);
  const keyring = keyringFromEnv(env);
  assertSelfTrusted(signingKey, keyring);
  const agentList = principalListText(env, LEDGER_ENV.agents, LEDGER_ENV.agentsFile);
  return {
    operators: parseOperatorTokens(env[LEDGER_ENV.operatorTokens]),
    agents: parseLedgerAgents(agentList.text, agentList.from),
    maxPendingKeys: bound(env, LEDGER_ENV.maxPendingKeys, DEFAULT_MAX_PENDING_KEYS),
    maxBudgets: bound(env, LEDGER_ENV.maxBudgets, DEFAULT_MAX_BUDGETS),
    decisionDeadlineMs: deadline,
    checkpointIntervalMs,
    ...(retainCompletedMs === undefined ? {} : { retainCompletedMs, expirySweepMs: sweep }),
    signingKey,
    keyring,
  };
}
