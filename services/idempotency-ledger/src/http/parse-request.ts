import { parseRequestWith } from '@gatehouse/service-runtime';
import { type z } from 'zod';
import { LedgerError } from '../errors.js';

export type { FieldProblem } from '@gatehouse/service-runtime';

/** Validates a request body or parameter set; throws LEDGER.INVALID_REQUEST naming the fields. */
export function parseRequest<S extends z.ZodType>(schema: S, raw: unknown): z.infer<S> {
  return parseRequestWith(schema, raw, (fields, message) => new LedgerError('LEDGER.INVALID_REQUEST', { fields: fields.map((f) => ({ ...f })) }, undefined, message));
}
