import { type z } from 'zod';

/** One invalid field: its path in the request and what it must be (never the value sent). */
export interface FieldProblem {
  readonly field: string;
  readonly problem: string;
}

/**
 * Validates a request body or parameter set with `schema`; on failure throws what `refuse` makes
 * of the invalid fields and a message naming them. zod's messages name the expectation
 * ("expected string"), never the input, so nothing sent is echoed.
 */
export function parseRequestWith<S extends z.ZodType>(schema: S, raw: unknown, refuse: (fields: FieldProblem[], message: string) => Error): z.infer<S> {
  const parsed = schema.safeParse(raw ?? {});
  if (parsed.success) return parsed.data;
  const fields = parsed.error.issues.map((issue) => ({ field: issue.path.length > 0 ? issue.path.map(String).join('.') : '(body)', problem: issue.message }));
  throw refuse(fields, `invalid field(s): ${[...new Set(fields.map((f) => `"${f.field}"`))].join(', ')}`);
}
