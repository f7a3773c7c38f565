import { describe, expect, it } from '@jest/globals';
import { type JsonValue } from '@gatehouse/contracts';
import { ApprovalError } from '../errors.js';
import { validateEdits } from './edit-validation.js';

const refundSchema: Record<string, JsonValue> = {
  $schema: 'https://json-schema.org/draft/2020-12/schema',
  type: 'object',
  properties: { orderId: { type: 'string' }, amount: { type: 'integer', minimum: 1, maximum: 500 }, lines: { type: 'array', items: { type: 'string' } } },
  required: ['orderId', 'amount'],
  additionalProperties: false,
};

/** The refusal's problems as `path keyword`, or `valid`. */
function problemsOf(schema: Record<string, JsonValue> | undefined, edited: JsonValue): string[] | 'valid' {
  try {
    validateEdits(schema, edited);
    return 'valid';
  } catch (error) {
    if (!(error instanceof ApprovalError) || error.code !== 'APPROVAL.EDITS_INVALID') throw error;
    const problems = (error.details as { problems: { path: string; keyword: string; message: string }[] }).problems;
    for (const p of problems) expect(typeof p.message).toBe('string');
    return problems.map((p) => `${p.path} ${p.keyword}`);
  }
}

describe('validateEdits', () => {
  it('accepts an edit the tool schema allows', () => {
    expect(problemsOf(refundSchema, { orderId: 'o-1', amount: 10 })).toBe('valid');
  });

  it('names each failing keyword where it failed, as reviewers read it: the root as /, no applicator entries', () => {
    expect([...(problemsOf(refundSchema, { amount: 9000, note: 'x' }) as string[])].sort()).toEqual(['/ additionalProperties', '/ required', '/amount maximum']);
    expect(problemsOf(refundSchema, { orderId: 'o-1', amount: 10, lines: ['a', 2] })).toEqual(['/lines/1 type']);
  });

  it('reports a schema-form additionalProperties by the failures inside it', () => {
    expect(problemsOf({ type: 'object', additionalProperties: { type: 'string' } }, { a: 'x', b: 1 })).toEqual(['/b type']);
  });

  it('never puts the value sent in a problem', () => {
    try {
      validateEdits(refundSchema, { orderId: 'o-secret-77', amount: 9123 });
    } catch (error) {
      expect(JSON.stringify((error as ApprovalError).details)).not.toMatch(/9123|o-secret-77/);
    }
  });

  it('does not assert format, as before', () => {
    expect(problemsOf({ type: 'object', properties: { to: { type: 'string', format: 'email' } } }, { to: 'not an address' })).toBe('valid');
  });

  it('refuses an edit when the request has no schema or an unusable one', () => {
    expect(problemsOf(undefined, { orderId: 'o-1' })).toEqual(['/ schema']);
    expect(problemsOf({ type: 'object', properties: { a: { type: 'no-such-type' } } }, { a: 1 })).toEqual(['/ schema']);
    expect(problemsOf({ $ref: 'https://elsewhere.invalid/schema.json' }, { a: 1 })).toEqual(['/ schema']);
  });
});
