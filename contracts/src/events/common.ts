import { z } from 'zod';

export const PrincipalKindSchema = z.enum(['human', 'service', 'agent', 'system']);

/** Who acted: always taken from trusted request context, never from a message. */
export const ActorSchema = z.object({
  id: z.string().min(1).max(256),
  role: z.string().min(1).max(128),
  kind: PrincipalKindSchema.default('human'),
});
export type Actor = z.infer<typeof ActorSchema>;

/** Which policy bundle revision produced a decision (OPA's decision-log revision). */
export const PolicyRefSchema = z.object({
  bundleId: z.string().min(1),
  revision: z.number().int().min(0),
  ruleId: z.string().min(1).optional(),
});

/** A JSON value: what tool arguments and recorded results may contain. */
export type JsonValue = string | number | boolean | null | JsonValue[] | { [key: string]: JsonValue };
export const JsonValueSchema: z.ZodType<JsonValue> = z.lazy(() =>
  z.union([
    z.string(),
    z.number().refine(Number.isFinite, 'must be a finite number'),
    z.boolean(),
    z.null(),
    z.array(JsonValueSchema),
    z.record(z.string(), JsonValueSchema),
  ]),
);

/** A grant scope: the exact call an approval or ledger entry is about. */
export const ScopeSchema = z.object({
  tenant: z.string().min(1),
  connectorId: z.string().min(1),
  /** Run, workflow or conversation the call belongs to. */
  executionId: z.string().min(1),
  /** Canonical hash of the tool-call arguments (hex sha-256). */
  argumentsHash: z.string().regex(/^[\da-f]{64}$/, 'must be a hex sha-256'),
});
export type Scope = z.infer<typeof ScopeSchema>;
