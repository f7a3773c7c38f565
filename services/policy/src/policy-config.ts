import { assertSelfTrusted, type Keyring, keyringFromEnv, type SigningKey, signingKeyFromEnv } from '@gatehouse/contracts';
import { type Allowed, allowed, type ApiKeyPrincipal, ApiKeySha256, parsePrincipalList, principalListText } from '@gatehouse/service-runtime';
import { z } from 'zod';

/** Environment variables of the policy service (besides the runtime's and the signing ones). */
export const POLICY_ENV = {
  /** JSON array `[{ id, role, apiKeySha256, policySets, publish, tenants?, agent?, kind? }]`: who may read, simulate, explain, (tenants) record decisions, and (publish: true) publish. */
  operators: 'GATEHOUSE_POLICY_OPERATORS',
  /** A file holding the same JSON; wins over the variable. */
  operatorsFile: 'GATEHOUSE_POLICY_OPERATORS_FILE',
} as const;

/** An operator of the policy service. */
export interface PolicyOperator extends ApiKeyPrincipal {
  readonly policySets: Allowed;
  /** May publish new versions (everyone configured may read, simulate and explain). */
  readonly publish: boolean;
  /**
   * The tenants whose audit trail `evaluate` may record this operator's decisions in; empty: a
   * read-only operator, which records nothing (403 on `evaluate`). Never a wildcard.
   */
  readonly tenants: ReadonlySet<string>;
  /** The agent id its recorded decisions are made and recorded as (policies match on it). */
  readonly agent?: string;
  /** What kind of actor it is in a decision record. */
  readonly kind: ActorKind;
}

export type ActorKind = 'human' | 'service' | 'agent';

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
  apiKeySha256: ApiKeySha256,
  policySets: z.union([z.literal('*'), z.array(z.string().min(1).max(128)).min(1)]),
  publish: z.boolean().default(false),
  tenants: z.array(z.string().min(1).max(256)).min(1).max(1_000).optional(),
  agent: z.string().min(1).max(256).optional(),
  kind: z.enum(['human', 'service', 'agent']).default('human'),
});

/** Parses the operator list; a bad entry is a typed error naming the field (never a key). */
export function parseOperators(json: string | undefined, variable: string = POLICY_ENV.operators): PolicyOperator[] {
  return parsePrincipalList(json, variable, 'operator', OperatorSchema).map((o) => ({
    id: o.id,
    role: o.role,
    keyDigest: Buffer.from(o.apiKeySha256, 'hex'),
    policySets: allowed(o.policySets),
    publish: o.publish,
    tenants: new Set(o.tenants ?? []),
    ...(o.agent !== undefined && { agent: o.agent }),
    kind: o.kind,
  }));
}

/** Reads the service's settings; no operator configured means every request is refused (401). */
export function policyOptionsFromEnv(env: NodeJS.ProcessEnv = process.env): PolicyOptions {
  const list = principalListText(env, POLICY_ENV.operators, POLICY_ENV.operatorsFile);
  const operators = parseOperators(list.text, list.from);
  const signingKey = signingKeyFromEnv('policy', env);
  const keyring = keyringFromEnv(env);
  assertSelfTrusted(signingKey, keyring);
  return { operators, signingKey, keyring };
}
