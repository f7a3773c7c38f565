// The shipped `tool-args` guardrail: a tool call's arguments against the tool's own JSON Schema.
// Validation is @cfworker/json-schema, an interpreter over the schema (no `new Function`, no
// `eval`), so it runs where code generation from strings is forbidden. What it does not judge
// ($dynamicRef, meta-schemas it cannot load, drafts it does not know) is refused, never allowed.
import { type OutputUnit, type Schema, validate as interpret, dereference } from '@cfworker/json-schema';
import { type JsonValue } from '@gatehouse/contracts';
import type { Guardrail, GuardrailInput, GuardrailVerdict } from './types.js';

/** The JSON Schema drafts the adapter understands. */
export type SchemaDraft = '4' | '7' | '2019-09' | '2020-12';
export const SCHEMA_DRAFTS: readonly SchemaDraft[] = Object.freeze(['4', '7', '2019-09', '2020-12']);

export interface SchemaGuardrailOptions {
  /** The draft for schemas without `$schema`; default `2020-12`. */
  readonly draft?: SchemaDraft;
  /** Schemas that `$ref` may reach by absolute URI, served from memory (nothing is fetched). */
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

// `$schema` URIs, compared without scheme and trailing `#`.
const DRAFT_BY_META_SCHEMA: Readonly<Record<string, SchemaDraft>> = {
  'json-schema.org/draft-04/schema': '4',
  'json-schema.org/draft-07/schema': '7',
  'json-schema.org/draft/2019-09/schema': '2019-09',
  'json-schema.org/draft/2020-12/schema': '2020-12',
};

// Keywords the interpreter ignores although they constrain the instance: ignoring one would
// allow what the schema forbids, so a schema using one cannot be used.
const UNSUPPORTED_KEYWORDS: readonly string[] = ['$dynamicRef'];

// A reason names at most this many failures; the detections still name every failing keyword.
const MAX_LISTED_FAILURES = 50;

/** A schema made ready to validate against, or why it cannot be used. */
export type PreparedSchema =
  | { readonly ok: true; readonly root: Schema | boolean; readonly draft: SchemaDraft; readonly lookup: Record<string, Schema | boolean> }
  | { readonly ok: false; readonly code: 'SCHEMA.UNUSABLE'; readonly reason: string };

/** Resolves the draft and the `$ref` targets of `schema` once, on a copy. Never throws. */
export function prepareSchema(schema: JsonValue, options: Pick<SchemaGuardrailOptions, 'draft' | 'remotes'> = {}): PreparedSchema {
  try {
    if (typeof schema !== 'boolean' && (schema === null || typeof schema !== 'object' || Array.isArray(schema))) {
      return unusable('the schema is neither an object nor a boolean');
    }
    const draft = draftOf(schema, options.draft ?? '2020-12');
    if (draft === undefined) return unusable('the schema names a $schema this guardrail does not support');
    const unsupported = findUnsupportedKeyword(schema);
    if (unsupported !== undefined) return unusable(`the schema uses ${unsupported}, which this guardrail does not support`);

    // The interpreter annotates the schema objects it dereferences: it works on copies.
    const root = structuredClone(schema) as Schema | boolean;
    const lookup = Object.create(null) as Record<string, Schema | boolean>;
    for (const [uri, remote] of Object.entries(options.remotes ?? {})) {
      const copy = structuredClone(remote);
      if (copy !== null && typeof copy === 'object' && !Array.isArray(copy)) {
        dereference({ ...(copy as Schema), $id: uri }, lookup);
      } else if (typeof copy === 'boolean') {
        lookup[uri] = copy;
      }
    }
    dereference(root as Schema, lookup);
    return { ok: true, root, draft, lookup };
  } catch {
    return unusable('the schema could not be prepared');
  }
}

/** Validates `value` against a prepared schema, naming every failing keyword. Never throws. */
export function validatePrepared(prepared: PreparedSchema, value: JsonValue): SchemaValidation {
  if (!prepared.ok) return prepared;
  try {
    // Not short-circuiting: one message names every failing keyword.
    const result = interpret(value, prepared.root as Schema, prepared.draft, prepared.lookup, false);
    if (result.valid) return { ok: true };
    return { ok: false, code: 'SCHEMA.INVALID_ARGUMENTS', failures: failuresOf(result.errors) };
  } catch (error) {
    // An unresolvable $ref or an invalid pattern shows only when it is reached.
    return unusable(error instanceof Error && error.message.startsWith('Unresolved $ref') ? 'the schema has an unresolvable $ref' : 'the schema could not be evaluated');
  }
}

/** Validates `value` against `schema` (the draft from `$schema`, else `options.draft`). Never throws. */
export function validateAgainstSchema(
  schema: JsonValue,
  value: JsonValue,
  options: Pick<SchemaGuardrailOptions, 'draft' | 'remotes'> = {},
): SchemaValidation {
  return validatePrepared(prepareSchema(schema, options), value);
}

/** The `tool-args` guardrail: `deny` with every failing keyword and pointer, `allow` otherwise. */
export function createSchemaGuardrail(options: SchemaGuardrailOptions = {}): Guardrail {
  const draft = options.draft ?? '2020-12';
  if (!SCHEMA_DRAFTS.includes(draft)) throw new RangeError(`unsupported JSON Schema draft "${String(draft)}"`);
  // Tool schemas are fixed for a tool's life: prepared once per schema object. A schema
  // mutated after its first use is not seen again; give the tool a new schema object instead.
  const prepared = new WeakMap<object, PreparedSchema>();
  const prepare = (schema: Readonly<Record<string, JsonValue>>): PreparedSchema => {
    // A tool's schema comes as JSON: it may be `true`/`false`, which a WeakMap cannot key.
    if (typeof schema !== 'object' || schema === null) return prepareSchema(schema as JsonValue, { draft, remotes: options.remotes });
    let found = prepared.get(schema);
    if (found === undefined) {
      found = prepareSchema(schema, { draft, remotes: options.remotes });
      prepared.set(schema, found);
    }
    return found;
  };
  return {
    name: options.name ?? 'schema',
    placements: ['tool-args'],
    check(input: GuardrailInput): GuardrailVerdict {
      if (input.placement !== 'tool-args') {
        return partialDeny('the schema guardrail judges tool arguments only');
      }
      const schema = input.tool?.inputSchema;
      if (schema === undefined) {
        return options.onMissingSchema === 'allow'
          ? { action: 'allow', outcome: 'complete', detections: [] }
          : partialDeny('the tool has no input schema to validate its arguments against');
      }
      return verdictOf(validatePrepared(prepare(schema), input.value));
    },
  };
}

/** Turns a validation into a verdict: reasons name pointers and keywords, never values. */
export function verdictOf(validation: SchemaValidation): GuardrailVerdict {
  if (validation.ok) return { action: 'allow', outcome: 'complete', detections: [] };
  switch (validation.code) {
    case 'SCHEMA.UNUSABLE':
      return partialDeny(validation.reason);
    case 'SCHEMA.INVALID_ARGUMENTS': {
      const listed = validation.failures.slice(0, MAX_LISTED_FAILURES).map((f) => `${f.keyword} at ${JSON.stringify(f.pointer)}`);
      const more = validation.failures.length - listed.length;
      return {
        action: 'deny',
        outcome: 'complete',
        detections: [...new Set(validation.failures.map((f) => `schema.${f.keyword}`))],
        reason: `tool arguments do not match the input schema: ${listed.join('; ')}${more > 0 ? `; and ${more} more` : ''}`,
      };
    }
    default: {
      const exhaustive: never = validation;
      return exhaustive;
    }
  }
}

function draftOf(schema: JsonValue, fallback: SchemaDraft): SchemaDraft | undefined {
  if (typeof schema !== 'object' || schema === null || Array.isArray(schema)) return fallback;
  const declared = schema['$schema'];
  if (declared === undefined) return fallback;
  if (typeof declared !== 'string') return undefined;
  const key = declared.replace(/^https?:\/\//, '').replace(/#$/, '');
  return Object.hasOwn(DRAFT_BY_META_SCHEMA, key) ? DRAFT_BY_META_SCHEMA[key] : undefined;
}

// Walks the whole schema document; `enum`/`const` values are data, so a `$dynamicRef` key
// inside them is not a keyword.
function findUnsupportedKeyword(node: JsonValue, parentKey?: string): string | undefined {
  if (node === null || typeof node !== 'object' || parentKey === 'enum' || parentKey === 'const') return undefined;
  if (Array.isArray(node)) {
    for (const item of node) {
      const found = findUnsupportedKeyword(item);
      if (found !== undefined) return found;
    }
    return undefined;
  }
  for (const [key, child] of Object.entries(node)) {
    if (UNSUPPORTED_KEYWORDS.includes(key)) return key;
    const found = findUnsupportedKeyword(child, key);
    if (found !== undefined) return found;
  }
  return undefined;
}

function failuresOf(errors: readonly OutputUnit[]): SchemaFailure[] {
  const seen = new Set<string>();
  const failures: SchemaFailure[] = [];
  for (const error of errors) {
    const failure = { pointer: jsonPointerOf(error.instanceLocation), keyword: error.keyword };
    const key = `${failure.keyword}\u0000${failure.pointer}`;
    if (seen.has(key)) continue;
    seen.add(key);
    failures.push(failure);
  }
  return failures;
}

// The interpreter reports a URI fragment (`#/a%20b/0`); the record wants RFC 6901 (`/a b/0`).
function jsonPointerOf(instanceLocation: string): string {
  return decodeURIComponent(instanceLocation.replace(/^#/, ''));
}

function unusable(reason: string): { readonly ok: false; readonly code: 'SCHEMA.UNUSABLE'; readonly reason: string } {
  return { ok: false, code: 'SCHEMA.UNUSABLE', reason };
}

function partialDeny(reason: string): GuardrailVerdict {
  return { action: 'deny', outcome: 'partial', detections: ['schema.unusable'], reason };
}
