// Gatekeeper policy bundles as data: the zod schema, and a parser for JSON or YAML text whose
// errors name the field (a path) and the kind of problem, never the offending value.
import { GatehouseError, type JsonValue } from '@gatehouse/contracts';
import { parse as parseYaml } from 'yaml';
import { z } from 'zod';

/** Largest bundle text accepted (bytes of UTF-16 text), checked before parsing. */
export const MAX_BUNDLE_TEXT = 1_000_000;
/** Most policies in one bundle. */
export const MAX_POLICIES = 10_000;

const Identifier = z.string().min(1).max(200).regex(/^[A-Za-z0-9_.:@/-]+$/);

/**
 * A match pattern: `*` (any present value), `prefix*` (e.g. `payments.*`), or an exact name.
 * Only a trailing `*` is a wildcard.
 */
export const MatchPatternSchema = z.string().min(1).max(200).regex(/^[^*\s]*\*?$/);

const JsonValueSchema: z.ZodType<JsonValue> = z.lazy(() =>
  z.union([z.string(), z.number().finite(), z.boolean(), z.null(), z.array(JsonValueSchema), z.record(z.string(), JsonValueSchema)]),
);

/** A condition: an expression in the gatekeeper language, or a registered predicate with arguments. */
export const ConditionSchema = z.union([
  z.string().min(1).max(2_000),
  z.strictObject({ predicate: Identifier, args: z.array(JsonValueSchema).max(32).optional() }),
]);

/** A dotted path into the tool input (`amount`, `options.dryRun`); prototype keys are refused. */
export const InputPathSchema = z
  .string()
  .min(1)
  .max(200)
  .regex(/^[A-Za-z0-9_$-]+(\.[A-Za-z0-9_$-]+){0,15}$/)
  .refine((p) => !p.split('.').some((s) => s === '__proto__' || s === 'constructor' || s === 'prototype'), { message: 'forbidden path segment' });

/** A value a rewrite writes: a JSON literal, or `{ expr }` computed by the expression language. */
export const RewriteValueSchema = z.union([z.strictObject({ expr: z.string().min(1).max(2_000) }), JsonValueSchema]);

/** A transformation of the tool input: optional guard, then `set` (path → value) and `remove` (paths). */
export const RewriteSchema = z
  .strictObject({
    when: ConditionSchema.optional(),
    set: z.record(InputPathSchema, RewriteValueSchema).optional(),
    remove: z.array(InputPathSchema).max(64).optional(),
  })
  .refine((r) => (r.set !== undefined && Object.keys(r.set).length > 0) || (r.remove !== undefined && r.remove.length > 0), {
    message: 'a rewrite sets or removes at least one path',
  });

export const PolicyRulesSchema = z
  .strictObject({
    allowWhen: ConditionSchema.optional(),
    denyWhen: ConditionSchema.optional(),
    requireApprovalWhen: ConditionSchema.optional(),
    rewrite: RewriteSchema.optional(),
  })
  .refine((r) => r.allowWhen !== undefined || r.denyWhen !== undefined || r.requireApprovalWhen !== undefined || r.rewrite !== undefined, {
    message: 'a policy has at least one rule',
  });

export const PolicyMatchSchema = z.strictObject({
  agents: z.array(MatchPatternSchema).min(1).max(100).optional(),
  tools: z.array(MatchPatternSchema).min(1).max(100).optional(),
  tenants: z.array(MatchPatternSchema).min(1).max(100).optional(),
  environments: z.array(MatchPatternSchema).min(1).max(100).optional(),
});

export const GatekeeperPolicySchema = z.strictObject({
  id: Identifier,
  version: z.string().min(1).max(64),
  priority: z.number().int().min(-1_000_000).max(1_000_000),
  description: z.string().max(1_000).optional(),
  match: PolicyMatchSchema,
  rules: PolicyRulesSchema,
});

/** A gatekeeper policy bundle: `{ policySetId, policies }`; policy ids are unique within it. */
export const GatekeeperBundleSchema = z
  .strictObject({
    policySetId: Identifier,
    description: z.string().max(1_000).optional(),
    policies: z.array(GatekeeperPolicySchema).max(MAX_POLICIES),
  })
  .superRefine((bundle, ctx) => {
    const seen = new Set<string>();
    bundle.policies.forEach((policy, i) => {
      if (seen.has(policy.id)) ctx.addIssue({ code: 'custom', path: ['policies', i, 'id'], message: 'duplicate policy id' });
      seen.add(policy.id);
    });
  });

export type GatekeeperCondition = z.infer<typeof ConditionSchema>;
export type GatekeeperRewrite = z.infer<typeof RewriteSchema>;
export type GatekeeperPolicyMatch = z.infer<typeof PolicyMatchSchema>;
export type GatekeeperPolicy = z.infer<typeof GatekeeperPolicySchema>;
export type GatekeeperBundle = z.infer<typeof GatekeeperBundleSchema>;

/** One schema problem: the field's path and the kind of problem (zod's issue code), never the value. */
export interface BundleIssue {
  readonly path: string;
  readonly code: string;
  readonly message: string;
}

// zod's own messages can quote allowed values but never the input; we still keep only our own
// wording for custom issues and the issue code for the rest, so nothing from the bundle leaks.
function issueOf(issue: z.core.$ZodIssue): BundleIssue {
  const path = issue.path.map(String).join('.') || '(root)';
  const message = issue.code === 'custom' ? issue.message : issue.code.replace(/_/g, ' ');
  return { path, code: issue.code, message };
}

/** The path of the first function in a parsed bundle (a HazelJS rule handed over as is), if any. */
function functionPath(value: unknown, path: readonly (string | number)[] = [], depth = 0): string | undefined {
  if (typeof value === 'function') return path.map(String).join('.') || '(root)';
  // Deeper than a bundle nests, the schema refuses it anyway.
  if (value === null || typeof value !== 'object' || depth > 32) return undefined;
  for (const [key, item] of Array.isArray(value) ? value.entries() : Object.entries(value)) {
    const found = functionPath(item, [...path, key], depth + 1);
    if (found !== undefined) return found;
  }
  return undefined;
}

/**
 * Parses and validates a bundle given as JSON text, YAML text or an already-parsed object.
 * Throws `GATEKEEPER.BUNDLE_UNPARSEABLE` (text that is neither), `GATEKEEPER.FUNCTION_RULE` (an
 * object holding a function, e.g. a HazelJS `allowWhen`: details `field`) or `GATEKEEPER.BUNDLE_INVALID`
 * (details: `issues` with the path and kind of each problem; the first in the message).
 */
export function parseGatekeeperBundle(source: string | unknown): GatekeeperBundle {
  let data: unknown = source;
  if (typeof source === 'string') {
    if (source.length > MAX_BUNDLE_TEXT) {
      throw new GatehouseError('GATEKEEPER.BUNDLE_TOO_LARGE', `bundle text exceeds ${MAX_BUNDLE_TEXT} characters`, {
        category: 'validation',
        details: { max: MAX_BUNDLE_TEXT },
      });
    }
    const trimmed = source.trimStart();
    const format = trimmed.startsWith('{') ? 'json' : 'yaml';
    try {
      data = format === 'json' ? JSON.parse(source) : parseYaml(source, { maxAliasCount: 100, uniqueKeys: true, prettyErrors: false });
    } catch (cause) {
      // The parser's message may quote the text: keep only where it failed.
      const position = format === 'yaml' && cause !== null && typeof cause === 'object' && 'pos' in cause && Array.isArray(cause.pos) ? Number(cause.pos[0]) : undefined;
      throw new GatehouseError('GATEKEEPER.BUNDLE_UNPARSEABLE', `bundle is not valid ${format.toUpperCase()}`, {
        category: 'validation',
        details: position === undefined ? { format } : { format, position },
      });
    }
  }
  const fn = functionPath(data);
  if (fn !== undefined) {
    throw new GatehouseError('GATEKEEPER.FUNCTION_RULE', `policy bundles are data: the value at ${fn} is a function, which cannot be signed or distributed (run function rules in-process: AgentGatekeeper from @gatehouse/guard/hazeljs, or a registered predicate named in the bundle)`, {
      category: 'validation',
      details: { field: fn },
    });
  }
  let result: ReturnType<typeof GatekeeperBundleSchema.safeParse>;
  try {
    result = GatekeeperBundleSchema.safeParse(data);
  } catch (error) {
    // Values nested thousands deep (a predicate's arguments) overflow the recursive schema: refuse, do not crash.
    if (!(error instanceof RangeError)) throw error;
    throw new GatehouseError('GATEKEEPER.BUNDLE_INVALID', 'invalid policy bundle at (root): nested too deeply', {
      category: 'validation',
      details: { field: '(root)', issues: [{ path: '(root)', code: 'too_deep', message: 'nested too deeply' }] },
    });
  }
  if (!result.success) {
    const issues = result.error.issues.slice(0, 20).map(issueOf);
    const first = issues[0]!;
    throw new GatehouseError('GATEKEEPER.BUNDLE_INVALID', `invalid policy bundle at ${first.path}: ${first.message}`, {
      category: 'validation',
      details: { field: first.path, issues: issues.map((i) => ({ path: i.path, code: i.code, message: i.message })) },
    });
  }
  return result.data;
}
