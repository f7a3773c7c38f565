import { type z } from 'zod';
import { ApprovalError } from '../errors.js';

/** Validates a request body or query; throws APPROVAL.INVALID_REQUEST naming the fields (never the values sent). */
export function parseRequest<S extends z.ZodType>(schema: S, raw: unknown): z.infer<S> {
  const parsed = schema.safeParse(raw ?? {});
  if (parsed.success) return parsed.data;
  const fields = parsed.error.issues.map((issue) => ({
    field: issue.path.length > 0 ? issue.path.map(String).join('.') : '(body)',
    problem: issue.message,
  }));
  const names = [...new Set(fields.map((f) => `"${f.field}"`))].join(', ');
  throw new ApprovalError('APPROVAL.INVALID_REQUEST', { fields }, undefined, `invalid field(s): ${names}`);
}
