import { JsonValueSchema } from '@gatehouse/contracts';
import { z } from 'zod';
import { type ConsumeRateAnswer } from '../consume-rate/consume-rate.js';
import { type FailKeyAnswer } from '../fail-key/fail-key.js';
import { type KeyView } from '../get-key/get-key.js';
import { type ReconcileKeyAnswer } from '../reconcile-key/reconcile-key.js';
import { type ReserveKeyAnswer } from '../reserve-key/reserve-key.js';
import { type ResolveKeyAnswer } from '../resolve-key/resolve-key.js';

// What the routes answer, as schemas: the document is generated from them, and the OpenAPI spec
// parses the service's real answers with them (`satisfies` ties each to the type the route returns).

const LeaseToken = z.uuid().describe("The holder's capability: completions, failures and reconciliations name it. Never shown again.");

export const ReserveKeyAnswerSchema = z.discriminatedUnion('status', [
  z.strictObject({
    status: z.literal('reserved'),
    leaseToken: LeaseToken,
    takenOver: z.boolean().describe('A stale reservation was taken over: reconcile before executing.'),
  }),
  z.strictObject({
    status: z.literal('completed'),
    result: JsonValueSchema.optional().describe('The recorded result: replay it, do not execute.'),
  }),
  z.strictObject({
    status: z.literal('pending'),
    retryAfterMs: z.number().int().min(1).describe('Another holder has it: ask again after this long.'),
  }),
  z.strictObject({ status: z.literal('ambiguous') }),
]) satisfies z.ZodType<ReserveKeyAnswer>;

export const CompleteKeyAnswerSchema = z.strictObject({ status: z.literal('completed') }) satisfies z.ZodType<{ status: 'completed' }>;

export const FailKeyAnswerSchema = z.strictObject({
  status: z.literal('failed'),
  keyStatus: z.enum(['free', 'ambiguous']).describe('`ambiguous`: the holder had taken the key over, so the earlier attempt is unknown.'),
}) satisfies z.ZodType<FailKeyAnswer>;

export const ReconcileKeyAnswerSchema = z.discriminatedUnion('status', [
  z.strictObject({ status: z.literal('completed') }),
  z.strictObject({ status: z.literal('reserved'), leaseToken: LeaseToken }),
]) satisfies z.ZodType<ReconcileKeyAnswer>;

export const ResolveKeyAnswerSchema = z.strictObject({
  status: z.literal('resolved'),
  decision: z.enum(['re-execute', 'mark-completed']),
}) satisfies z.ZodType<ResolveKeyAnswer>;

const LogTime = z.number().int().describe('Epoch ms, log append time.');

export const KeyViewSchema = z.strictObject({
  key: z.string().describe('The key as the caller named it.'),
  tenant: z.string(),
  ledgerKey: z.string().describe('The key as the ledger stores it: what an operator resolution names.'),
  status: z.enum(['pending', 'completed', 'ambiguous']),
  connectorId: z.string(),
  holder: z.string().optional(),
  ambiguous: z.boolean(),
  result: JsonValueSchema.optional(),
  reservedAt: LogTime.optional(),
  pendingTtlMs: z.number().int().optional(),
  completedAt: LogTime.optional(),
  ambiguousSince: LogTime.optional(),
  position: z
    .strictObject({ partition: z.number().int(), offset: z.string() })
    .describe('Where the last event about the key is on the log.'),
}) satisfies z.ZodType<KeyView>;

export const ConsumeRateAnswerSchema = z.strictObject({
  allowed: z.boolean().describe('A refusal is an answer and consumes nothing.'),
  remaining: z.number().int(),
  resetAt: LogTime.describe('Epoch ms (log time) when one more unit frees up.'),
}) satisfies z.ZodType<ConsumeRateAnswer>;

export const EchoAnswerSchema = z.strictObject({
  ok: z.literal(true),
  bytes: z.number().int().describe('Length of the body as JSON text.'),
});
