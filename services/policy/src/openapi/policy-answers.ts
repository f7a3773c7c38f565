import { JsonValueSchema } from '@gatehouse/contracts';
import { GatekeeperBundleSchema, type GatekeeperDecision, type GatekeeperExplanation } from '@gatehouse/gatekeeper';
import { z } from 'zod';
import { type RecordedDecision } from '../decide/policy-decisions.js';
import { type JsonChange } from '../read-versions/bundle-diff.js';

// What the routes answer, as schemas: the document is generated from them, and the OpenAPI spec
// parses the service's real answers with them (`satisfies` ties each to the type the route
// returns, where TypeScript can compare the two).

/** A published version (`VersionView`); `bundle` only where one version is asked for or published. */
export const VersionViewSchema = z.strictObject({
  policySetId: z.string(),
  revision: z.number().int().min(1),
  digest: z.string().regex(/^[\da-f]{64}$/).describe('Hex sha-256 of the canonical bundle.'),
  publishedBy: z.string().describe('The id of the operator who published it.'),
  publishedAt: z.iso.datetime().describe('Log append time of the publication.'),
  keyId: z.string().describe('The policy service key that signed it.'),
  bundle: GatekeeperBundleSchema.optional(),
});

export const VersionListSchema = z.strictObject({ items: z.array(VersionViewSchema) });

export const VersionDiffSchema = z.strictObject({
  from: z.number().int(),
  to: z.number().int(),
  changes: z.array(
    z.strictObject({
      path: z.string().describe('JSON pointer; policies are matched by id, not position.'),
      op: z.enum(['added', 'removed', 'changed']),
      from: JsonValueSchema.optional(),
      to: JsonValueSchema.optional(),
    }) satisfies z.ZodType<JsonChange>,
  ),
});

const Effect = z.enum(['allow', 'deny', 'require-approval', 'rewrite']);
const RuleId = z.enum(['allowWhen', 'denyWhen', 'requireApprovalWhen', 'rewrite']);

const decisionCore = {
  effect: Effect,
  policyId: z.string().optional(),
  policyVersion: z.string().optional(),
  ruleId: RuleId.optional(),
  reason: z.string().describe('A static reason (never input content).'),
  fault: z.string().optional().describe('Set when the decision failed closed on an evaluation fault (a stable code).'),
  rewrittenInput: JsonValueSchema.optional().describe('For `rewrite`: the input the tool would get.'),
  rewrites: z.number().int().optional(),
};

/** `GatekeeperDecision`: what simulate answers. */
export const GatekeeperDecisionSchema = z.strictObject({
  ...decisionCore,
  mode: z.enum(['enforce', 'audit', 'disabled']),
  bundle: z
    .strictObject({ policySetId: z.string(), revision: z.number().int().optional() })
    .describe('The bundle version the decision was made under.'),
  wouldHave: z.strictObject(decisionCore).optional().describe('In audit mode: what enforce mode would have decided.'),
}) satisfies z.ZodType<GatekeeperDecision>;

/** `GatekeeperExplanation`: what explain answers. */
export const GatekeeperExplanationSchema = z.strictObject({
  decision: GatekeeperDecisionSchema,
  matched: z.array(z.string()).describe('Policy ids whose match block matched the call.'),
  policies: z.array(
    z.strictObject({
      policyId: z.string(),
      version: z.string(),
      priority: z.number().int(),
      status: z.enum(['decided', 'outranked', 'no-rule-fired', 'lower-priority', 'not-matched', 'fault']),
      field: z
        .enum(['agents', 'tools', 'tenants', 'environments'])
        .optional()
        .describe('For `not-matched`: the first match field that did not match.'),
      rules: z.array(z.strictObject({ ruleId: RuleId, result: z.enum(['true', 'false', 'fault']) })).optional(),
    }),
  ),
}) satisfies z.ZodType<GatekeeperExplanation>;

/** `RecordedDecision`: what evaluate answers, once the decision is on the audit topic. */
export const RecordedDecisionSchema = GatekeeperDecisionSchema.extend({
  decisionId: z.uuid().describe("The recorded DecisionRecorded's subject."),
  recorded: z.literal(true),
  recordedAs: z
    .strictObject({
      tenant: z.string(),
      actor: z.strictObject({ id: z.string(), role: z.string(), kind: z.enum(['human', 'service', 'agent']) }),
      agentId: z.string().optional(),
    })
    .describe('Who the decision was made and recorded as: the authenticated operator, never the body.'),
}) satisfies z.ZodType<RecordedDecision>;
