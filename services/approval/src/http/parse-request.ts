import { parseRequestWith } from '@gatehouse/service-runtime';
import { type z } from 'zod';
import { ApprovalError } from '../errors.js';

/** Validates a request body or query; throws APPROVAL.INVALID_REQUEST naming the fields (never the values sent). */
export function parseRequest<S extends z.ZodType>(schema: S, raw: unknown): z.infer<S> {
  return parseRequestWith(schema, raw, (fields, message) => new ApprovalError('APPROVAL.INVALID_REQUEST', { fields: fields.map((f) => ({ ...f })) }, undefined, message));
}
