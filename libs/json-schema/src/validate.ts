// Validating an instance: the fast path's predicate (fast-path.ts) settles a valid instance;
// an invalid one (or one the predicate cannot settle) is interpreted, so the failures, their
// order and their locations always come from the interpreter. `interpretInstance` skips every
// predicate: the reference the fast path is tested against (fast-path.spec.ts).
import { type JsonValue } from '@gatehouse/contracts';
import { Evaluation, type Predicate, type SchemaFailure, evaluateSchema } from './evaluation.js';
import type { InstanceValidation, JsonSchemaValidator } from './index.js';
import { EvaluationDepthError, ReferenceCycleError } from './problems.js';

interface ValidateOptions {
  readonly assertFormats?: boolean;
}

const NO_OPTIONS: ValidateOptions = Object.freeze({});
const VALID: InstanceValidation = Object.freeze({ outcome: 'valid' });

/**
 * Validates `instance`, naming every failing keyword with its instance location. `format` is
 * asserted unless `assertFormats` is false (then it is an annotation, as 2019-09 and 2020-12 default to).
 */
export function validateInstance(validator: JsonSchemaValidator, instance: JsonValue, options: ValidateOptions = NO_OPTIONS): InstanceValidation {
  const assertsFormats = options.assertFormats ?? true;
  if (validator.fastPath !== undefined && holds(validator.fastPath, instance, assertsFormats)) return VALID;
  return interpret(validator, instance, new Evaluation(assertsFormats, validator.needsAnnotations));
}

/** As `validateInstance`, by the interpreter alone: no predicate is asked, at any level. */
export function interpretInstance(validator: JsonSchemaValidator, instance: JsonValue, options: ValidateOptions = NO_OPTIONS): InstanceValidation {
  return interpret(validator, instance, new Evaluation(options.assertFormats ?? true, validator.needsAnnotations, false));
}

function interpret(validator: JsonSchemaValidator, instance: JsonValue, evaluation: Evaluation): InstanceValidation {
  try {
    if (evaluateSchema(validator.root, instance, evaluation)) return VALID;
    return { outcome: 'invalid', failures: distinct(evaluation.failures) };
  } catch (error) {
    // A reference cycle without progress would never end: the instance does not validate.
    if (error instanceof ReferenceCycleError) return { outcome: 'invalid', failures: [{ pointer: error.pointer, keyword: error.keyword }] };
    // The depth limit, or (should a host's stack be smaller than ours) the engine's own.
    if (error instanceof EvaluationDepthError || error instanceof RangeError) return { outcome: 'too-deep' };
    throw error;
  }
}

// What the predicate cannot settle (data compared by `enum` nested past the limit, a host
// stack smaller than ours) the interpreter does, and reports as a value.
function holds(test: Predicate, instance: JsonValue, assertsFormats: boolean): boolean {
  try {
    return test(instance, assertsFormats);
  } catch {
    return false;
  }
}

// The same keyword failing at the same location twice (two references to one schema, the
// branches of a `oneOf`) is one failure. A list is usually short (one entry per failing
// keyword): pairs are compared directly, and failures at one location share one pointer
// string, so most comparisons are of references. A long list (every item of a big array
// failing) is grouped by location instead.
function distinct(failures: readonly SchemaFailure[]): SchemaFailure[] {
  if (failures.length > 64) return distinctByLocation(failures);
  const result: SchemaFailure[] = [];
  for (const failure of failures) {
    if (!result.some((kept) => kept.keyword === failure.keyword && kept.pointer === failure.pointer)) result.push(failure);
  }
  return result;
}

function distinctByLocation(failures: readonly SchemaFailure[]): SchemaFailure[] {
  const keywordsAt = new Map<string, string[]>();
  const result: SchemaFailure[] = [];
  for (const failure of failures) {
    const keywords = keywordsAt.get(failure.pointer);
    if (keywords === undefined) keywordsAt.set(failure.pointer, [failure.keyword]);
    else if (keywords.includes(failure.keyword)) continue;
    else keywords.push(failure.keyword);
    result.push(failure);
  }
  return result;
}
