import { parseRequestWith } from '@gatehouse/service-runtime';
import { type z } from 'zod';
import { PolicyError } from '../errors.js';

/** Validates a request body or query; throws POLICY.INVALID_REQUEST naming the fields (never the values sent). */
export function parseRequest<S extends z.ZodType>(schema: S, raw: unknown): z.infer<S> {
  return parseRequestWith(schema, raw, (fields, message) => new PolicyError('POLICY.INVALID_REQUEST', { fields: fields.map((f) => ({ ...f })) }, undefined, message));
}
