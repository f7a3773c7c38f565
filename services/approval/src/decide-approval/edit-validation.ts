import { type JsonValue } from '@gatehouse/contracts';
import { Ajv2020, type ErrorObject, type ValidateFunction } from 'ajv/dist/2020.js';
import { ApprovalError } from '../errors.js';

/** One failing keyword of an edit: where, which keyword, what it expects (never the value sent). */
export interface EditProblem {
  readonly path: string;
  readonly keyword: string;
  readonly message: string;
}

// One compiler for the process; compiled schemas are cached by their canonical text.
const ajv = new Ajv2020({ allErrors: true, strict: false, validateFormats: false });
const compiled = new Map<string, ValidateFunction>();
const MAX_CACHED = 1_000;

function compile(schema: Record<string, JsonValue>): ValidateFunction {
  const key = JSON.stringify(schema);
  let validate = compiled.get(key);
  if (!validate) {
    // zod's JSON Schema names draft 2020-12; an older $schema would make Ajv2020 refuse it.
    const { $schema: _ignored, ...body } = schema;
    validate = ajv.compile(body);
    if (compiled.size >= MAX_CACHED) compiled.clear();
    compiled.set(key, validate);
  }
  return validate;
}

const problemOf = (e: ErrorObject): EditProblem => ({ path: e.instancePath === '' ? '/' : e.instancePath, keyword: e.keyword, message: e.message ?? 'is invalid' });

/**
 * Validates a reviewer's edited arguments against the tool's input schema from the request,
 * reporting every failing keyword (APPROVAL.EDITS_INVALID, 422). A request without a schema
 * cannot be edited: there is nothing to hold the edit to.
 */
export function validateEdits(inputSchema: Record<string, JsonValue> | undefined, edited: JsonValue): void {
  if (inputSchema === undefined) {
    throw new ApprovalError('APPROVAL.EDITS_INVALID', { problems: [{ path: '/', keyword: 'schema', message: 'the request carries no input schema, so it cannot be edited' }] });
  }
  let validate: ValidateFunction;
  try {
    validate = compile(inputSchema);
  } catch {
    throw new ApprovalError('APPROVAL.EDITS_INVALID', { problems: [{ path: '/', keyword: 'schema', message: "the tool's input schema cannot be compiled" }] });
  }
  if (validate(edited)) return;
  const problems = (validate.errors ?? []).map(problemOf);
  throw new ApprovalError('APPROVAL.EDITS_INVALID', { problems: problems.map((p) => ({ ...p })) }, undefined, `the edited arguments fail ${problems.length} keyword(s) of the tool's input schema`);
}
