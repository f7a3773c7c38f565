import { type z } from 'zod';
import { LedgerError } from '../errors.js';

/** One invalid field: its path in the request and what it must be (never the value sent). */
export interface FieldProblem {
  readonly field: string;
  readonly problem: string;
}

/** Validates a request body or parameter set; throws LEDGER.INVALID_REQUEST naming the fields. */
export function parseRequest<S extends z.ZodType>(schema: S, raw: unknown): z.infer<S> {
  const parsed = schema.safeParse(raw ?? {});
  if (parsed.success) return parsed.data;
  // zod's messages name the expectation ("expected string", "must be a hex sha-256"), not the input.
  const fields: FieldProblem[] = parsed.error.issues.map((issue) => ({
    field: issue.path.length > 0 ? issue.path.map(String).join('.') : '(body)',
    problem: issue.message,
  }));
  const names = [...new Set(fields.map((f) => `"${f.field}"`))].join(', ');
  throw new LedgerError('LEDGER.INVALID_REQUEST', { fields: fields.map((f) => ({ ...f })) }, undefined, `invalid field(s): ${names}`);
}
