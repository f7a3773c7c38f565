import { readFileSync } from 'node:fs';
import { assertSelfTrusted, GatehouseError, type Keyring, keyringFromEnv, type SigningKey, signingKeyFromEnv } from '@gatehouse/contracts';
import { type Allowed, allowed, type ApiKeyPrincipal } from '@gatehouse/service-runtime';
import { z } from 'zod';

/** Environment variables of the policy service (besides the runtime's and the signing ones). */
export const POLICY_ENV = {
  /** JSON array `[{ id, role, apiKeySha256, policySets, publish }]`: who may read, simulate, evaluate, and (publish: true) publish. */
  operators: 'GATEHOUSE_POLICY_OPERATORS',
  /** A file holding the same JSON; wins over the variable. */
  operatorsFile: 'GATEHOUSE_POLICY_OPERATORS_FILE',
} as const;

/** An operator of the policy service. */
export interface PolicyOperator extends ApiKeyPrincipal {
  readonly policySets: Allowed;
  /** May publish new versions (everyone configured may read, simulate, explain and evaluate). */
  readonly publish: boolean;
}

export interface PolicyOptions {
  readonly operators: readonly PolicyOperator[];
  /** Signs every published version (GATEHOUSE_SIGNING_KEY_FILE). */
  readonly signingKey: SigningKey;
  /** The policy keys the fold trusts (GATEHOUSE_TRUSTED_KEYS_FILE), this service's own among them. */
  readonly keyring: Keyring;
}

const OperatorSchema = z.strictObject({
  id: z.string().min(1).max(256),
  role: z.string().min(1).max(128),
  apiKeySha256: z.string().regex(/^[0-9a-f]{64}$/, 'must be the hex sha-256 of the API key'),
  policySets: z.union([z.literal('*'), z.array(z.string().min(1).max(128)).min(1)]),
  publish: z.boolean().default(false),
});

function invalid(variable: string, expectation: string): GatehouseError {
  return new GatehouseError('CONFIG.INVALID', `${variable} ${expectation}`, { category: 'validation', details: { variable } });
}

/** Parses the operator list; a bad entry is a typed error naming the field (never a key). */
export function parseOperators(json: string | undefined, variable: string = POLICY_ENV.operators): PolicyOperator[] {
  if (json === undefined || json.trim() === '') return [];
  let raw: unknown;
  try {
    raw = JSON.parse(json);
  } catch {
    throw invalid(variable, 'must be a JSON array of operators');
  }
  const parsed = z.array(OperatorSchema).safeParse(raw);
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    throw invalid(variable, `has an invalid operator field "${issue?.path.map(String).join('.') ?? ''}": ${issue?.message ?? 'invalid'}`);
  }
  return parsed.data.map((o) => ({ id: o.id, role: o.role, keyDigest: Buffer.from(o.apiKeySha256, 'hex'), policySets: allowed(o.policySets), publish: o.publish }));
}

/** Reads the service's settings; no operator configured means every request is refused (401). */
export function policyOptionsFromEnv(env: NodeJS.ProcessEnv = process.env): PolicyOptions {
  const file = env[POLICY_ENV.operatorsFile];
  const operators = file ? parseOperators(readFileSync(file, 'utf8'), POLICY_ENV.operatorsFile) : parseOperators(env[POLICY_ENV.operators]);
  const signingKey = signingKeyFromEnv('policy', env);
  const keyring = keyringFromEnv(env);
  assertSelfTrusted(signingKey, keyring);
  return { operators, signingKey, keyring };
}
