import { type z } from 'zod';
import { AuditError } from '../errors.js';

/** Validates request parameters; throws AUDIT.INVALID_REQUEST naming the parameters, never their values. */
export function parseRequest<S extends z.ZodType>(schema: S, raw: unknown): z.infer<S> {
  const parsed = schema.safeParse(raw ?? {});
  if (parsed.success) return parsed.data;
  const fields = parsed.error.issues.map((issue) => {
    const field = issue.path.length > 0 ? issue.path.map(String).join('.') : issue.code === 'unrecognized_keys' ? 'query' : '(request)';
    // zod messages name the expectation; for unknown keys they would name the key: keep it static.
    return { field, problem: issue.code === 'unrecognized_keys' ? 'unknown parameter' : issue.message };
  });
  const names = [...new Set(fields.map((f) => `"${f.field}"`))].join(', ');
  throw new AuditError('AUDIT.INVALID_REQUEST', { fields }, `invalid parameter(s): ${names}`);
}
