import { readFileSync } from 'node:fs';
import { DEFAULT_GRANT_TTL_MS, MAX_GRANT_TTL_MS } from '@gatehouse/approvals';
import { APPROVAL_RETAIN_ENV, approvalRetainMsFromEnv } from '@gatehouse/approval-projection';
import { assertSelfTrusted, GatehouseError, type Keyring, keyringFromEnv, type SigningKey, signingKeyFromEnv } from '@gatehouse/contracts';
import { type Allowed, allowed, type ApiKeyPrincipal, ApiKeySha256, parsePrincipalList, principalListText } from '@gatehouse/service-runtime';
import { z } from 'zod';
import { type ReviewerWebhooks, webhooksFromEnv } from './notify-reviewers/webhook-config.js';

export { admits, allowed, type Allowed } from '@gatehouse/service-runtime';

/** Environment variables of the approval service (besides the runtime's). */
export const APPROVAL_ENV = {
  /** JSON array of reviewers: `[{ id, role, apiKeySha256, tenants, connectors }]` (`*` allows all). */
  reviewers: 'GATEHOUSE_APPROVAL_REVIEWERS',
  /** A file holding the same JSON (mounted secrets); wins over the variable. */
  reviewersFile: 'GATEHOUSE_APPROVAL_REVIEWERS_FILE',
  /** HS256 secret (at least 32 bytes) for reviewer JWTs; without it only API keys are accepted. */
  jwtSecretFile: 'GATEHOUSE_APPROVAL_JWT_SECRET_FILE',
  /** Required `iss` and `aud` of reviewer JWTs, when set. */
  jwtIssuer: 'GATEHOUSE_APPROVAL_JWT_ISSUER',
  jwtAudience: 'GATEHOUSE_APPROVAL_JWT_AUDIENCE',
  /** How often pending approvals past their deadline are expired, ms (default 1000). */
  expirySweepMs: 'GATEHOUSE_APPROVAL_EXPIRY_SWEEP_MS',
  /** How long a decision waits for its own event to be folded, ms (default 5000). */
  decisionDeadlineMs: 'GATEHOUSE_APPROVAL_DECISION_DEADLINE_MS',
  /**
   * How long an approval's grant may be used after the decision, ms (default 900000, 15 min;
   * at most 7 days): the decision's `useBy`. Past it the agent's use is refused, whatever the log holds.
   */
  grantTtlMs: 'GATEHOUSE_APPROVAL_GRANT_TTL_MS',
} as const;

/** A reviewer as configured: who they are and what they may decide. */
export interface ReviewerGrant {
  readonly id: string;
  readonly role: string;
  readonly tenants: Allowed;
  readonly connectors: Allowed;
}

/** A reviewer with the sha-256 of their API key (the key itself is never configured or stored). */
export interface ApiKeyReviewer extends ReviewerGrant, ApiKeyPrincipal {}

export interface ApprovalOptions {
  readonly reviewers: readonly ApiKeyReviewer[];
  /** Signs every decision and expiry (GATEHOUSE_SIGNING_KEY_FILE, GATEHOUSE_SIGNING_KEY_ID). */
  readonly signingKey: SigningKey;
  /** The approval keys the fold trusts (GATEHOUSE_TRUSTED_KEYS_FILE): this service's own, and others' during a rotation. */
  readonly keyring: Keyring;
  readonly jwt?: { readonly secret: Buffer; readonly issuer?: string; readonly audience?: string };
  readonly expirySweepMs: number;
  readonly decisionDeadlineMs: number;
  /** How long a grant may be used after its decision, ms. */
  readonly grantTtlMs: number;
  /** How long the fold keeps a settled approval, ms (GATEHOUSE_APPROVAL_RETAIN_MS, default 7 days); its row stays. */
  readonly retainMs?: number;
  /** Reviewer webhooks per tenant (GATEHOUSE_APPROVAL_WEBHOOKS, see notify-reviewers/); none: nothing is sent. */
  readonly webhooks?: ReviewerWebhooks;
}

const Scope = z.union([z.literal('*'), z.array(z.string().min(1).max(256)).min(1)]);
const ReviewerSchema = z.strictObject({
  id: z.string().min(1).max(256),
  role: z.string().min(1).max(128),
  apiKeySha256: ApiKeySha256,
  tenants: Scope,
  connectors: Scope,
});

function invalid(variable: string, expectation: string): GatehouseError {
  return new GatehouseError('CONFIG.INVALID', `${variable} ${expectation}`, { category: 'validation', details: { variable } });
}

/** Parses the reviewer list; a bad entry is a typed error naming the variable and the field (never a key). */
export function parseReviewers(json: string | undefined, variable: string = APPROVAL_ENV.reviewers): ApiKeyReviewer[] {
  const reviewers = parsePrincipalList(json, variable, 'reviewer', ReviewerSchema);
  const ids = new Set<string>();
  return reviewers.map((r) => {
    if (ids.has(r.id)) throw invalid(variable, `lists reviewer "${r.id}" twice`);
    ids.add(r.id);
    return { id: r.id, role: r.role, tenants: allowed(r.tenants), connectors: allowed(r.connectors), keyDigest: Buffer.from(r.apiKeySha256, 'hex') };
  });
}

function positiveInt(env: NodeJS.ProcessEnv, variable: string, fallback: number): number {
  const raw = env[variable];
  if (raw === undefined) return fallback;
  const n = Number(raw);
  if (!Number.isSafeInteger(n) || n < 1) throw invalid(variable, 'must be a positive integer (ms)');
  return n;
}

function grantTtl(env: NodeJS.ProcessEnv): number {
  const ttl = positiveInt(env, APPROVAL_ENV.grantTtlMs, DEFAULT_GRANT_TTL_MS);
  if (ttl > MAX_GRANT_TTL_MS) throw invalid(APPROVAL_ENV.grantTtlMs, `must be at most ${MAX_GRANT_TTL_MS} ms (7 days)`);
  return ttl;
}

/** Reads the service's own settings; no reviewer configured means every request is refused (401). */
export function approvalOptionsFromEnv(env: NodeJS.ProcessEnv = process.env): ApprovalOptions {
  const list = principalListText(env, APPROVAL_ENV.reviewers, APPROVAL_ENV.reviewersFile);
  const reviewers = parseReviewers(list.text, list.from);
  const secretFile = env[APPROVAL_ENV.jwtSecretFile];
  let jwt: ApprovalOptions['jwt'];
  if (secretFile) {
    const secret = Buffer.from(readFileSync(secretFile, 'utf8').trim(), 'utf8');
    if (secret.length < 32) throw invalid(APPROVAL_ENV.jwtSecretFile, 'must hold a secret of at least 32 bytes');
    const issuer = env[APPROVAL_ENV.jwtIssuer];
    const audience = env[APPROVAL_ENV.jwtAudience];
    jwt = { secret, ...(issuer && { issuer }), ...(audience && { audience }) };
  }
  const signingKey = signingKeyFromEnv('approval', env);
  const keyring = keyringFromEnv(env);
  assertSelfTrusted(signingKey, keyring);
  const webhooks = webhooksFromEnv(env);
  return {
    reviewers,
    signingKey,
    keyring,
    ...(jwt && { jwt }),
    expirySweepMs: positiveInt(env, APPROVAL_ENV.expirySweepMs, 1_000),
    decisionDeadlineMs: positiveInt(env, APPROVAL_ENV.decisionDeadlineMs, 5_000),
    grantTtlMs: grantTtl(env),
    retainMs: retainMs(env),
    ...(webhooks && { webhooks }),
  };
}

function retainMs(env: NodeJS.ProcessEnv): number {
  try {
    return approvalRetainMsFromEnv(env);
  } catch {
    throw invalid(APPROVAL_RETAIN_ENV, 'must be a positive whole number of milliseconds');
  }
}
