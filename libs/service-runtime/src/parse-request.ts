import { type z } from 'zod';

/** One invalid field: its path in the request and what it must be (never the value sent). */
export interface FieldProblem {
  readonly field: string;
  readonly problem: string;
}

/**
 * Validates a request body or parameter set with `schema`; on failure throws what `refuse` makes
 * of the invalid fields and a message naming them. zod's messages name the expectation
 * ("expected string"), never the input, so nothing sent is echoed, except the message of unknown
 * keys, which lists them: that one is replaced by a static text.
 */
export function parseRequestWith<S extends z.ZodType>(schema: S, raw: unknown, refuse: (fields: FieldProblem[], message: string) => Error): z.infer<S> {
  const parsed = safeParse(schema, raw, refuse);
  if (parsed.success) return parsed.data;
  const fields = parsed.error.issues.map((issue) => ({
    field: issue.path.length > 0 ? issue.path.map(String).join('.') : '(body)',
    problem: issue.code === 'unrecognized_keys' ? 'has unknown fields' : issue.message,
  }));
  throw refuse(fields, `invalid field(s): ${[...new Set(fields.map((f) => `"${f.field}"`))].join(', ')}`);
}

function safeParse<S extends z.ZodType>(schema: S, raw: unknown, refuse: (fields: FieldProblem[], message: string) => Error) {
  try {
    return schema.safeParse(raw ?? {});
  } catch (error) {
    // A recursive schema (any JSON value) walking a body nested thousands deep overflows the stack.
    if (error instanceof RangeError) throw refuse([{ field: '(body)', problem: 'is nested too deeply' }], 'invalid field(s): "(body)"');
    throw error;
  }
}
