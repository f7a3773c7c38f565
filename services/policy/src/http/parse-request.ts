import { type z } from 'zod';
import { PolicyError } from '../errors.js';

/** Validates a request body or query; throws POLICY.INVALID_REQUEST naming the fields (never the values sent). */
export function parseRequest<S extends z.ZodType>(schema: S, raw: unknown): z.infer<S> {
  const parsed = schema.safeParse(raw ?? {});
  if (parsed.success) return parsed.data;
  const fields = parsed.error.issues.map((issue) => ({ field: issue.path.length > 0 ? issue.path.map(String).join('.') : '(body)', problem: issue.message }));
  throw new PolicyError('POLICY.INVALID_REQUEST', { fields }, undefined, `invalid field(s): ${[...new Set(fields.map((f) => `"${f.field}"`))].join(', ')}`);
}
