// The shipped `tool-args` guardrail: a tool call's arguments against the tool's own JSON Schema.
// Validation is gatehouse's own interpreter (@gatehouse/json-schema): preparing a schema compiles it
// into keyword nodes once (no `new Function`, no `eval`), so it runs where code generation from
// strings is forbidden. The draft meta-schemas ship with it, in memory; every other document a
// `$ref` reaches comes from `remotes`, also in memory: nothing is ever fetched. What it cannot
// use is refused (deny, outcome `partial`), never allowed.
import { type JsonValue, readOptions } from '@gatehouse/contracts';
import {
  FAILURE_ALIASES,
  type JsonSchemaValidator,
  KNOWN_KEYWORDS,
  type RemoteSchemas,
  type SchemaProblem,
  indexRemotes,
  prepareJsonSchema,
  validateInstance,
} from '@gatehouse/json-schema';
import { type GuardrailReasonCode } from './reasons.js';
import type { Guardrail, GuardrailInput, GuardrailVerdict } from './types.js';

// Every detection the guardrail reports: a failing keyword the interpreter knows (with the names a
// failure can take besides its keyword: a `false` subschema, min/maxContains, then/else), or unusable.
const SCHEMA_DETECTIONS: readonly string[] = Object.freeze([...[...KNOWN_KEYWORDS, ...FAILURE_ALIASES].map((k) => `schema.${k}`), 'schema.unusable']);

/** The JSON Schema drafts the adapter understands. */
export type SchemaDraft = '4' | '7' | '2019-09' | '2020-12';
export const SCHEMA_DRAFTS: readonly SchemaDraft[] = Object.freeze(['4', '7', '2019-09', '2020-12']);

export interface SchemaGuardrailOptions {
  /** The draft for schemas without `$schema`; default `2020-12`. */
  readonly draft?: SchemaDraft;
  /**
   * Schemas that `$ref` may reach by absolute URI, served from memory (nothing is fetched). A
   * remote may also serve as a custom meta-schema (`$schema`) built on the four drafts' vocabularies.
   */
  readonly remotes?: Readonly<Record<string, JsonValue>>;
  /** A tool without an input schema: `deny` (default, outcome `partial`) or `allow`. */
  readonly onMissingSchema?: 'deny' | 'allow';
  /** The guardrail's name in verdict records; default `schema`. */
  readonly name?: string;
}

/** One failing keyword: where in the arguments (an RFC 6901 JSON Pointer) and which keyword. */
export interface SchemaFailure {
  readonly pointer: string;
  readonly keyword: string;
}

/** The outcome of one validation, as a value. */
export type SchemaValidation =
  | { readonly ok: true }
  | { readonly ok: false; readonly code: 'SCHEMA.INVALID_ARGUMENTS'; readonly failures: readonly SchemaFailure[] }
  | { readonly ok: false; readonly code: 'SCHEMA.UNUSABLE'; readonly reason: string };

/** A schema made ready to validate against, or why it cannot be used. */
export type PreparedSchema =
  | { readonly ok: true; readonly compiled: JsonSchemaValidator; readonly draft: SchemaDraft | 'custom' }
  | { readonly ok: false; readonly code: 'SCHEMA.UNUSABLE'; readonly reason: string };

/**
 * Resolves the draft and compiles `schema` (and the `$ref` targets it reaches) once. Never
 * rejects. Asynchronous for compatibility with earlier engines; the work is synchronous.
 */
export async function prepareSchema(schema: JsonValue, options: Pick<SchemaGuardrailOptions, 'draft' | 'remotes'> = {}): Promise<PreparedSchema> {
  const draft = options.draft ?? '2020-12';
  const remotes = remoteSchemasOf(options.remotes, draft);
  return 'code' in remotes ? unusable(remotes.message) : prepareWith(schema, draft, remotes);
}

function prepareWith(schema: JsonValue, draft: SchemaDraft, remotes: RemoteSchemas): PreparedSchema {
  const prepared = prepareJsonSchema(schema, { draft, remotes });
  if (!prepared.ok) return unusable(prepared.problem.message);
  return { ok: true, compiled: prepared.validator, draft: prepared.validator.dialect };
}

const VALID_ARGUMENTS: SchemaValidation = Object.freeze({ ok: true });

/** Validates `value` against a prepared schema, naming every failing keyword. Never throws. */
export function validatePrepared(prepared: PreparedSchema, value: JsonValue): SchemaValidation {
  if (!prepared.ok) return prepared;
  try {
    const result = validateInstance(prepared.compiled, value);
    switch (result.outcome) {
      case 'valid':
        return VALID_ARGUMENTS;
      case 'invalid':
        return { ok: false, code: 'SCHEMA.INVALID_ARGUMENTS', failures: result.failures };
      case 'too-deep':
        return unusable('the arguments nest deeper than the schema guardrail evaluates');
      default: {
        const exhaustive: never = result;
        return exhaustive;
      }
    }
  } catch {
    return unusable('the schema could not be evaluated');
  }
}

/** Validates `value` against `schema` (the draft from `$schema`, else `options.draft`). Never rejects. */
export async function validateAgainstSchema(
  schema: JsonValue,
  value: JsonValue,
  options: Pick<SchemaGuardrailOptions, 'draft' | 'remotes'> = {},
): Promise<SchemaValidation> {
  return validatePrepared(await prepareSchema(schema, options), value);
}

/** The `tool-args` guardrail: `deny` with every failing keyword and pointer, `allow` otherwise. */
export function createSchemaGuardrail(options: SchemaGuardrailOptions = {}): Guardrail {
  readOptions('createSchemaGuardrail', options, ['draft', 'remotes', 'onMissingSchema', 'name']);
  const draft = options.draft ?? '2020-12';
  if (!SCHEMA_DRAFTS.includes(draft)) throw new RangeError(`unsupported JSON Schema draft "${String(draft)}"`);
  // The remotes are indexed once, on first use; a broken remote makes every schema unusable.
  let remotes: RemoteSchemas | SchemaProblem | undefined;
  const prepareOnce = (schema: JsonValue): PreparedSchema => {
    remotes ??= remoteSchemasOf(options.remotes, draft);
    return 'code' in remotes ? unusable(remotes.message) : prepareWith(schema, draft, remotes);
  };
  // Tool schemas are fixed for a tool's life: prepared once per schema object. A schema mutated
  // after its first use is not seen again; give the tool a new schema object instead.
  const prepared = new WeakMap<object, PreparedSchema>();
  const prepare = (schema: Readonly<Record<string, JsonValue>>): PreparedSchema => {
    // A tool's schema comes as JSON: it may be `true`/`false`, which a WeakMap cannot key.
    if (typeof schema !== 'object' || schema === null) return prepareOnce(schema as JsonValue);
    let found = prepared.get(schema);
    if (found === undefined) {
      found = prepareOnce(schema);
      prepared.set(schema, found);
    }
    return found;
  };
  return {
    name: options.name ?? 'schema',
    placements: ['tool-args'],
    detections: SCHEMA_DETECTIONS,
    check(input: GuardrailInput): GuardrailVerdict {
      if (input.placement !== 'tool-args') {
        return partialDeny('schema.wrong-placement');
      }
      const schema = input.tool?.inputSchema;
      if (schema === undefined) {
        return options.onMissingSchema === 'allow'
          ? { action: 'allow', outcome: 'complete', detections: [] }
          : partialDeny('schema.missing');
      }
      return verdictOf(validatePrepared(prepare(schema), input.value));
    },
  };
}

/**
 * Turns a validation into a verdict: detections name the failing keywords, the reason is a catalogue
 * code. Pointers stay out of the verdict: they are built from the arguments' own keys, which are
 * content (`validateAgainstSchema` gives them to a caller that wants them locally).
 */
export function verdictOf(validation: SchemaValidation): GuardrailVerdict {
  if (validation.ok) return ALLOW;
  switch (validation.code) {
    case 'SCHEMA.UNUSABLE':
      return partialDeny('schema.unusable');
    case 'SCHEMA.INVALID_ARGUMENTS':
      return { action: 'deny', outcome: 'complete', detections: detectionsOf(validation.failures), reason: 'schema.invalid' };
    default: {
      const exhaustive: never = validation;
      return exhaustive;
    }
  }
}

// Shared by every allowed call (frozen, as the guardrail runner's own allow verdict is): the
// common answer costs no allocation.
const ALLOW: GuardrailVerdict = Object.freeze({ action: 'allow', outcome: 'complete', detections: Object.freeze([]) });

// Each keyword's detection name, built once rather than per failure.
const DETECTION_OF_KEYWORD: ReadonlyMap<string, string> = new Map([...KNOWN_KEYWORDS, ...FAILURE_ALIASES].map((keyword) => [keyword, `schema.${keyword}`]));

// One detection per failing keyword, in the order the failures name them.
function detectionsOf(failures: readonly SchemaFailure[]): string[] {
  const detections: string[] = [];
  for (const failure of failures) {
    const detection = DETECTION_OF_KEYWORD.get(failure.keyword) ?? `schema.${failure.keyword}`;
    if (!detections.includes(detection)) detections.push(detection);
  }
  return detections;
}

function remoteSchemasOf(remotes: Readonly<Record<string, JsonValue>> | undefined, draft: SchemaDraft): RemoteSchemas | SchemaProblem {
  const indexed = indexRemotes(remotes ?? {}, draft);
  return indexed.ok ? indexed.remotes : { code: indexed.problem.code, message: 'a remote schema could not be prepared' };
}

function unusable(reason: string): { readonly ok: false; readonly code: 'SCHEMA.UNUSABLE'; readonly reason: string } {
  return { ok: false, code: 'SCHEMA.UNUSABLE', reason };
}

function partialDeny(reason: GuardrailReasonCode): GuardrailVerdict {
  return { action: 'deny', outcome: 'partial', detections: ['schema.unusable'], reason };
}
