// What can make a schema unusable, as values, and the two errors that carry them out of deep
// recursion inside this module (they never leave it: index.ts turns them back into values).

/** Why a schema cannot be used. */
export type SchemaProblemCode =
  | 'NOT_A_SCHEMA'
  | 'UNSUPPORTED_DIALECT'
  | 'UNKNOWN_VOCABULARY'
  | 'UNRESOLVABLE_REF'
  | 'INVALID_KEYWORD'
  | 'INVALID_PATTERN'
  | 'FAILS_META_SCHEMA'
  | 'TOO_DEEP';

export interface SchemaProblem {
  readonly code: SchemaProblemCode;
  /** Names keywords and locations in the schema, never instance values. */
  readonly message: string;
}

/** Thrown while indexing or compiling a schema; caught at this module's boundary. */
export class SchemaProblemError extends Error {
  override readonly name = 'SchemaProblemError';
  constructor(
    readonly code: SchemaProblemCode,
    message: string,
  ) {
    super(message);
  }

  get problem(): SchemaProblem {
    return { code: this.code, message: this.message };
  }
}

/**
 * Thrown while validating when the evaluation nests deeper than the limit (a deep instance
 * under a recursive schema, or deep data compared by `enum`/`const`/`uniqueItems`), before the
 * JavaScript stack would overflow.
 */
export class EvaluationDepthError extends Error {
  override readonly name = 'EvaluationDepthError';
}

/**
 * Thrown while validating when a `$ref` (or `$dynamicRef`/`$recursiveRef`) re-enters a schema
 * location it is already evaluating at the same instance location: evaluation would never end.
 * The suite (infinite-loop-detection.json) counts that as the instance failing.
 */
export class ReferenceCycleError extends Error {
  override readonly name = 'ReferenceCycleError';
  constructor(
    readonly keyword: string,
    readonly pointer: string,
  ) {
    super(`${keyword} cycles at ${JSON.stringify(pointer)}`);
  }
}
