// A reviewer's edit is judged by the same JSON Schema interpreter as the guard's schema guardrail
// (@gatehouse/json-schema), so one engine decides what a tool's input schema allows. What the
// reviewer reads keeps the shape it had under Ajv: `{ path, keyword, message }`, one entry per
// keyword that failed where it failed, `format` not asserted.
import { type JsonValue } from '@gatehouse/contracts';
import { type JsonSchemaValidator, type SchemaFailure, prepareJsonSchema, validateInstance } from '@gatehouse/json-schema';
import { ApprovalError } from '../errors.js';

/** One failing keyword of an edit: where, which keyword, what it expects (never the value sent). */
export interface EditProblem {
  readonly path: string;
  readonly keyword: string;
  readonly message: string;
}

// Prepared schemas are cached by their canonical text (one per tool, in practice), as is a
// schema that cannot be prepared.
const prepared = new Map<string, JsonSchemaValidator | undefined>();
const MAX_CACHED = 1_000;

function prepare(schema: Record<string, JsonValue>): JsonSchemaValidator | undefined {
  const key = JSON.stringify(schema);
  if (prepared.has(key)) return prepared.get(key);
  // The draft the schema names in `$schema` (zod's JSON Schema names 2020-12), else 2020-12.
  const preparation = prepareJsonSchema(schema, { draft: '2020-12' });
  const validator = preparation.ok ? preparation.validator : undefined;
  if (prepared.size >= MAX_CACHED) prepared.clear();
  prepared.set(key, validator);
  return validator;
}

/**
 * Validates a reviewer's edited arguments against the tool's input schema from the request,
 * reporting every failing keyword (APPROVAL.EDITS_INVALID, 422). A request without a schema
 * cannot be edited: there is nothing to hold the edit to.
 */
export function validateEdits(inputSchema: Record<string, JsonValue> | undefined, edited: JsonValue): void {
  if (inputSchema === undefined) throw schemaRefusal('the request carries no input schema, so it cannot be edited');
  const validator = prepare(inputSchema);
  if (validator === undefined) throw schemaRefusal("the tool's input schema cannot be compiled");
  let problems: EditProblem[];
  try {
    const validation = validateInstance(validator, edited, { assertFormats: false });
    switch (validation.outcome) {
      case 'valid':
        return;
      case 'invalid':
        problems = reviewerProblems(validation.failures);
        break;
      case 'too-deep':
        throw schemaRefusal("the edited arguments nest deeper than the tool's input schema can be evaluated");
      default: {
        const exhaustive: never = validation;
        return exhaustive;
      }
    }
  } catch (error) {
    if (error instanceof ApprovalError) throw error;
    throw schemaRefusal("the tool's input schema could not be evaluated");
  }
  throw new ApprovalError('APPROVAL.EDITS_INVALID', { problems: problems.map((p) => ({ ...p })) }, undefined, `the edited arguments fail ${problems.length} keyword(s) of the tool's input schema`);
}

function schemaRefusal(message: string): ApprovalError {
  return new ApprovalError('APPROVAL.EDITS_INVALID', { problems: [{ path: '/', keyword: 'schema', message }] });
}

// Applicators that fail only because a subschema failed: the subschema's failures are listed
// (the interpreter lists them right after the applicator), the applicator is not.
const ENCLOSING = new Set(['properties', 'patternProperties', 'prefixItems', 'allOf', '$ref', '$dynamicRef', '$recursiveRef', 'dependentSchemas']);
// Applicators over each further property or item: with a `false` subschema the keyword itself
// is the problem (reported once, where it stands); with a schema, the schema's failures are.
const EACH_CHILD = new Set(['additionalProperties', 'unevaluatedProperties', 'items', 'additionalItems', 'unevaluatedItems']);

/**
 * The interpreter's failures (outside in, each applicator before its subschemas' failures) in the
 * shape reviewers read: the keyword that failed where it failed, the root as `/`.
 */
export function reviewerProblems(failures: readonly SchemaFailure[]): EditProblem[] {
  const kept: SchemaFailure[] = [];
  for (let i = 0; i < failures.length; i++) {
    const failure = failures[i] as SchemaFailure;
    const next = failures[i + 1];
    if (ENCLOSING.has(failure.keyword) && next !== undefined) continue;
    if (EACH_CHILD.has(failure.keyword) && next !== undefined) {
      if (!isFalseChildOf(next, failure.pointer)) continue;
      while (failures[i + 1] !== undefined && isFalseChildOf(failures[i + 1] as SchemaFailure, failure.pointer)) i++;
    }
    kept.push(failure);
  }
  // Should every failure be an applicator's (a reference cycle names only its `$ref`), list them all.
  return (kept.length > 0 ? kept : failures).map((f) => ({ path: f.pointer === '' ? '/' : f.pointer, keyword: f.keyword, message: messageOf(f.keyword) }));
}

function isFalseChildOf(failure: SchemaFailure, parent: string): boolean {
  if (failure.keyword !== 'false' || !failure.pointer.startsWith(`${parent}/`)) return false;
  return !failure.pointer.slice(parent.length + 1).includes('/');
}

// What each keyword expects, in words: never the value sent, and (unlike Ajv) not the schema's
// own limits either, which the failure does not carry; the reviewer has the schema beside the edit.
const MESSAGES: Readonly<Record<string, string>> = {
  type: 'must be of the type the schema names',
  required: 'must have every required property',
  additionalProperties: 'must NOT have additional properties',
  unevaluatedProperties: 'must NOT have unevaluated properties',
  items: 'must NOT have more items than the schema allows',
  additionalItems: 'must NOT have more items than the schema allows',
  unevaluatedItems: 'must NOT have unevaluated items',
  maximum: 'must not be greater than the maximum',
  exclusiveMaximum: 'must be less than the exclusive maximum',
  minimum: 'must not be less than the minimum',
  exclusiveMinimum: 'must be greater than the exclusive minimum',
  multipleOf: 'must be a multiple of the schema\u2019s multipleOf',
  maxLength: 'must NOT be longer than maxLength',
  minLength: 'must NOT be shorter than minLength',
  pattern: 'must match the schema\u2019s pattern',
  maxItems: 'must NOT have more than maxItems items',
  minItems: 'must NOT have fewer than minItems items',
  uniqueItems: 'must NOT have duplicate items',
  maxProperties: 'must NOT have more than maxProperties properties',
  minProperties: 'must NOT have fewer than minProperties properties',
  enum: 'must be equal to one of the allowed values',
  const: 'must be equal to the constant',
  contains: 'must contain an item that matches the contains schema',
  minContains: 'must contain at least minContains matching items',
  maxContains: 'must contain at most maxContains matching items',
  propertyNames: 'property names must match the propertyNames schema',
  dependentRequired: 'must have the properties its present properties depend on',
  dependencies: 'must have the properties its present properties depend on',
  anyOf: 'must match a schema in anyOf',
  oneOf: 'must match exactly one schema in oneOf',
  not: 'must NOT be valid against the schema in not',
  then: 'must match the "then" schema',
  else: 'must match the "else" schema',
  false: 'is not allowed here (boolean schema is false)',
};

function messageOf(keyword: string): string {
  return Object.hasOwn(MESSAGES, keyword) ? (MESSAGES[keyword] as string) : `must satisfy the schema\u2019s ${keyword} keyword`;
}
