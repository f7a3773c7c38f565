// The shipped `tool-args` guardrail: a tool call's arguments against the tool's own JSON Schema.
// Validation is @hyperjump/json-schema, an interpreter: preparing a schema builds an AST of
// keyword handlers (no `new Function`, no `eval`), so it runs where code generation from strings
// is forbidden. The draft meta-schemas ship with it, in memory; every other document a `$ref`
// reaches comes from `remotes`, also in memory: its http, https and file retrieval is switched
// off for the whole process (see below), so nothing is ever fetched. What it cannot use is
// refused (deny, outcome `partial`), never allowed.
import { removeUriSchemePlugin } from '@hyperjump/browser';
import {
  type CompiledSchema,
  DETAILED,
  type SchemaDocument,
  buildSchemaDocument,
  compile,
  getSchema,
  interpret,
} from '@hyperjump/json-schema/experimental';
import { type OutputUnit, setShouldValidateFormat } from '@hyperjump/json-schema';
import * as Instance from '@hyperjump/json-schema/instance/experimental';
import '@hyperjump/json-schema/draft-04';
import '@hyperjump/json-schema/draft-07';
import '@hyperjump/json-schema/draft-2019-09';
import '@hyperjump/json-schema/draft-2020-12';
import '@hyperjump/json-schema/formats';
import { type JsonValue } from '@gatehouse/contracts';
import type { Guardrail, GuardrailInput, GuardrailVerdict } from './types.js';

// @hyperjump/browser registers http(s) (fetch) and file (fs) retrieval when it loads; a schema
// that `$ref`s a document not given in memory must fail, not reach the network or the disk.
// The plugin table is the library's, process-wide: importing this module switches it off for
// every user of @hyperjump/browser in the process.
for (const scheme of ['http', 'https', 'file']) removeUriSchemePlugin(scheme);
// `format` is asserted (stricter than the annotation 2019-09 and 2020-12 default to), with the
// library's format handlers; a format it has no handler for passes. Also process-wide.
setShouldValidateFormat(true);

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

// The meta-schema URI of each draft, as the interpreter names its dialects.
const META_SCHEMA_OF: Readonly<Record<SchemaDraft, string>> = {
  '4': 'http://json-schema.org/draft-04/schema',
  '7': 'http://json-schema.org/draft-07/schema',
  '2019-09': 'https://json-schema.org/draft/2019-09/schema',
  '2020-12': 'https://json-schema.org/draft/2020-12/schema',
};

// `$schema` URIs, compared without scheme and trailing `#`.
const DRAFT_BY_META_SCHEMA: Readonly<Record<string, SchemaDraft>> = {
  'json-schema.org/draft-04/schema': '4',
  'json-schema.org/draft-07/schema': '7',
  'json-schema.org/draft/2019-09/schema': '2019-09',
  'json-schema.org/draft/2020-12/schema': '2020-12',
};

// The retrieval URI of a tool schema without an `$id`. `.invalid` never resolves (RFC 2606):
// a relative `$ref` from it reaches only what `remotes` holds.
const TOOL_SCHEMA_URI = 'https://tool-schema.gatehouse.invalid/input.json';

// The interpreter's keyword id for a failing boolean (`false`) schema.
const FALSE_SCHEMA_KEYWORD = 'https://json-schema.org/evaluation/validate';

// A reason names at most this many failures; the detections still name every failing keyword.
const MAX_LISTED_FAILURES = 50;

/** A schema made ready to validate against, or why it cannot be used. */
export type PreparedSchema =
  | { readonly ok: true; readonly compiled: CompiledSchema; readonly draft: SchemaDraft | 'custom' }
  | { readonly ok: false; readonly code: 'SCHEMA.UNUSABLE'; readonly reason: string };

/** The `remotes` as the interpreter's documents, by every URI they answer to. */
type RemoteDocuments = Readonly<Record<string, SchemaDocument>>;

/**
 * Resolves the draft and compiles `schema` (and the `$ref` targets it reaches) once. Never
 * rejects. Asynchronous: the interpreter compiles asynchronously, though it only reads memory.
 */
export async function prepareSchema(schema: JsonValue, options: Pick<SchemaGuardrailOptions, 'draft' | 'remotes'> = {}): Promise<PreparedSchema> {
  const draft = options.draft ?? '2020-12';
  let remotes: RemoteDocuments;
  try {
    remotes = remoteDocuments(options.remotes, draft);
  } catch {
    return unusable('a remote schema could not be prepared');
  }
  return prepareWith(schema, draft, options.remotes ?? {}, remotes);
}

async function prepareWith(schema: JsonValue, fallback: SchemaDraft, remoteValues: Readonly<Record<string, JsonValue>>, remotes: RemoteDocuments): Promise<PreparedSchema> {
  if (typeof schema !== 'boolean' && (schema === null || typeof schema !== 'object' || Array.isArray(schema))) {
    return unusable('the schema is neither an object nor a boolean');
  }
  const draft = draftOf(schema, fallback, remoteValues);
  if (draft === undefined) return unusable('the schema names a $schema this guardrail does not support');
  const misread = findMisreadIdentifier(schema, draft);
  if (misread !== undefined) return unusable(`the schema has ${misread}, which this guardrail would misread`);
  try {
    // On a plain copy: the tool's schema is never touched, and only its own keys count.
    const dialect = draft === 'custom' ? undefined : META_SCHEMA_OF[draft];
    const document = buildSchemaDocument(plainCopy(schema) as Parameters<typeof buildSchemaDocument>[0], TOOL_SCHEMA_URI, dialect);
    // A per-preparation cache: the root, the documents embedded in it, then the remotes. The
    // interpreter adds its registered meta-schemas; anything else is a retrieval, which fails.
    const cache: Record<string, SchemaDocument> = { ...remotes, ...embeddedOf(document), [TOOL_SCHEMA_URI]: document };
    const compiled = await compile(await getSchema(TOOL_SCHEMA_URI, { _cache: cache } as unknown as Parameters<typeof getSchema>[1]));
    return { ok: true, compiled, draft };
  } catch (error) {
    return unusable(reasonOf(error));
  }
}

/** Validates `value` against a prepared schema, naming every failing keyword. Never throws. */
export function validatePrepared(prepared: PreparedSchema, value: JsonValue): SchemaValidation {
  if (!prepared.ok) return prepared;
  try {
    // DETAILED output: every failing keyword, applicators included, each with its instance location.
    const result = interpret(prepared.compiled, instanceOf(value), DETAILED);
    if (result.valid) return { ok: true };
    return { ok: false, code: 'SCHEMA.INVALID_ARGUMENTS', failures: failuresOf(result.errors ?? []) };
  } catch (error) {
    return unusable(error instanceof RangeError ? 'the schema recurses without end' : 'the schema could not be evaluated');
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
  const draft = options.draft ?? '2020-12';
  if (!SCHEMA_DRAFTS.includes(draft)) throw new RangeError(`unsupported JSON Schema draft "${String(draft)}"`);
  const remoteValues = options.remotes ?? {};
  // The remotes become documents once, on first use; a broken remote makes every schema unusable.
  let remotes: RemoteDocuments | Error | undefined;
  const prepareOnce = (schema: JsonValue): Promise<PreparedSchema> => {
    if (remotes === undefined) {
      try {
        remotes = remoteDocuments(remoteValues, draft);
      } catch {
        remotes = new Error('a remote schema could not be prepared');
      }
    }
    return remotes instanceof Error ? Promise.resolve(unusable(remotes.message)) : prepareWith(schema, draft, remoteValues, remotes);
  };
  // Tool schemas are fixed for a tool's life: prepared once per schema object (concurrent first
  // checks share one preparation). A schema mutated after its first use is not seen again; give
  // the tool a new schema object instead. Once prepared, a check validates synchronously.
  const prepared = new WeakMap<object, PreparedSchema | Promise<PreparedSchema>>();
  const prepare = (schema: Readonly<Record<string, JsonValue>>): PreparedSchema | Promise<PreparedSchema> => {
    // A tool's schema comes as JSON: it may be `true`/`false`, which a WeakMap cannot key.
    if (typeof schema !== 'object' || schema === null) return prepareOnce(schema as JsonValue);
    let found = prepared.get(schema);
    if (found === undefined) {
      const pending = prepareOnce(schema);
      prepared.set(schema, pending);
      void pending.then((done) => prepared.set(schema, done));
      found = pending;
    }
    return found;
  };
  return {
    name: options.name ?? 'schema',
    placements: ['tool-args'],
    check(input: GuardrailInput): GuardrailVerdict | Promise<GuardrailVerdict> {
      if (input.placement !== 'tool-args') {
        return partialDeny('the schema guardrail judges tool arguments only');
      }
      const schema = input.tool?.inputSchema;
      if (schema === undefined) {
        return options.onMissingSchema === 'allow'
          ? { action: 'allow', outcome: 'complete', detections: [] }
          : partialDeny('the tool has no input schema to validate its arguments against');
      }
      const ready = prepare(schema);
      return ready instanceof Promise
        ? ready.then((done) => verdictOf(validatePrepared(done, input.value)))
        : verdictOf(validatePrepared(ready, input.value));
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

// The draft from `$schema` (one of the four, or `custom`: a meta-schema given in `remotes`), else
// the fallback; undefined for any other `$schema`.
function draftOf(schema: JsonValue, fallback: SchemaDraft, remotes: Readonly<Record<string, JsonValue>>): SchemaDraft | 'custom' | undefined {
  if (typeof schema !== 'object' || schema === null || Array.isArray(schema)) return fallback;
  const declared = schema['$schema'];
  if (declared === undefined) return fallback;
  if (typeof declared !== 'string') return undefined;
  const key = declared.replace(/^https?:\/\//, '').replace(/#$/, '');
  if (Object.hasOwn(DRAFT_BY_META_SCHEMA, key)) return DRAFT_BY_META_SCHEMA[key];
  return Object.hasOwn(remotes, declared.replace(/#$/, '')) ? 'custom' : undefined;
}

// Builds each remote as a document, in the given draft unless it names its own `$schema`, and
// files it under its URI, its `$id` and the `$id`s embedded in it.
function remoteDocuments(remotes: Readonly<Record<string, JsonValue>> | undefined, draft: SchemaDraft): RemoteDocuments {
  const documents: Record<string, SchemaDocument> = Object.create(null) as Record<string, SchemaDocument>;
  for (const [uri, remote] of Object.entries(remotes ?? {})) {
    if (typeof remote !== 'boolean' && (remote === null || typeof remote !== 'object' || Array.isArray(remote))) continue;
    const document = buildSchemaDocument(plainCopy(remote) as Parameters<typeof buildSchemaDocument>[0], uri, META_SCHEMA_OF[draft]);
    for (const [id, embedded] of Object.entries(embeddedOf(document))) documents[id] ??= embedded;
    documents[uri] = document;
  }
  return documents;
}

// Keywords that identify a schema resource or a location in it. The interpreter (1.18.0) reads
// them wherever they stand in the schema document, data values included: an `$anchor` inside an
// `enum` value is registered as an anchor and stripped from the value, an `$id` there turns the
// value into a separate schema resource. A schema with one of them (as a string) inside `enum`,
// `const`, `default` or `examples` is refused rather than misread. (`$ref` there is kept intact;
// `id` is an identifier in draft 4 only.)
const IDENTIFIER_KEYWORDS: readonly string[] = ['$id', '$anchor', '$dynamicAnchor'];

/** Keywords whose value is one schema, per draft family. */
const SCHEMA_VALUED: readonly string[] = ['additionalProperties', 'additionalItems', 'contains', 'propertyNames', 'not', 'if', 'then', 'else', 'unevaluatedItems', 'unevaluatedProperties', 'contentSchema', 'items'];
/** Keywords whose value is a map of names to schemas. */
const SCHEMA_MAPS: readonly string[] = ['properties', 'patternProperties', 'definitions', '$defs', 'dependentSchemas', 'dependencies'];
/** Keywords whose value is an array of schemas. */
const SCHEMA_ARRAYS: readonly string[] = ['allOf', 'anyOf', 'oneOf', 'prefixItems', 'items'];

/**
 * Where the engine would take an identifier for one that is not: an identifier keyword in a
 * position that is not a schema (inside `enum`/`const`/`default`/`examples` values or an unknown
 * keyword), or, before 2019-09, an `$id`/`id` beside `$ref` (those drafts ignore the siblings of
 * `$ref`; @hyperjump/json-schema 1.18.0 lets them change the base URI). Either could make `$ref`
 * resolve to the wrong subschema and allow invalid data, so the guardrail refuses such schemas.
 */
function findMisreadIdentifier(schema: JsonValue, draft: SchemaDraft | 'custom'): string | undefined {
  const idKey = draft === '4' ? 'id' : '$id';
  const legacyRef = draft === '4' || draft === '7';
  const identifierKeys = draft === '4' ? [...IDENTIFIER_KEYWORDS, 'id'] : IDENTIFIER_KEYWORDS;
  // Data (not a schema): any identifier-looking key below here is misread by the engine.
  const inData = (node: JsonValue): string | undefined => {
    if (node === null || typeof node !== 'object') return undefined;
    for (const [key, child] of Array.isArray(node) ? node.map((c, i) => [String(i), c] as const) : Object.entries(node)) {
      if (!Array.isArray(node) && typeof child === 'string' && identifierKeys.includes(key)) return `${key} inside a value that is not a schema`;
      const found = inData(child);
      if (found !== undefined) return found;
    }
    return undefined;
  };
  const inSchema = (node: JsonValue): string | undefined => {
    if (node === null || typeof node !== 'object' || Array.isArray(node)) return undefined;
    if (legacyRef && typeof node['$ref'] === 'string' && node[idKey] !== undefined) return `${idKey} beside $ref`;
    for (const [key, child] of Object.entries(node)) {
      let found: string | undefined;
      if (SCHEMA_ARRAYS.includes(key) && Array.isArray(child)) {
        for (const item of child) if ((found = inSchema(item)) !== undefined) break;
      } else if (SCHEMA_VALUED.includes(key)) {
        found = inSchema(child);
      } else if (SCHEMA_MAPS.includes(key) && child !== null && typeof child === 'object' && !Array.isArray(child)) {
        // `dependencies` (before 2019-09) maps names to a schema or to an array of names.
        for (const value of Object.values(child)) if ((found = Array.isArray(value) ? inData(value) : inSchema(value)) !== undefined) break;
      } else if (!(typeof child === 'string' && (identifierKeys.includes(key) || key === '$ref' || key === '$schema' || key === '$dynamicRef' || key === '$recursiveRef'))) {
        // Any other keyword's value is data (enum, const, default, examples, unknown keywords).
        found = inData(child);
      }
      if (found !== undefined) return found;
    }
    return undefined;
  };
  return inSchema(schema);
}

// A deep copy of a JSON value as plain objects and arrays: own enumerable keys only, `__proto__`
// as an ordinary key. The interpreter accepts nothing else (an object of another realm, say).
function plainCopy(value: JsonValue): JsonValue {
  if (value === null || typeof value !== 'object') return value;
  if (Array.isArray(value)) return value.map(plainCopy);
  const copy: Record<string, JsonValue> = {};
  for (const key of Object.keys(value)) {
    Object.defineProperty(copy, key, { value: plainCopy(value[key] as JsonValue), enumerable: true, configurable: true, writable: true });
  }
  return copy;
}

// Tool arguments usually come from JSON.parse and are used as they are; anything the interpreter
// does not take as JSON (objects of another realm, with another prototype) is validated as a plain copy.
function instanceOf(value: JsonValue): ReturnType<typeof Instance.fromJs> {
  try {
    return Instance.fromJs(value);
  } catch {
    return Instance.fromJs(plainCopy(value));
  }
}

// The documents a document embeds (by `$id`), itself included.
function embeddedOf(document: SchemaDocument): Record<string, SchemaDocument> {
  return (document.embedded ?? {}) as Record<string, SchemaDocument>;
}

function reasonOf(error: unknown): string {
  const name = error instanceof Error ? error.name : '';
  const message = error instanceof Error ? error.message : '';
  if (name === 'RetrievalError' || message.startsWith('No such anchor') || /is undefined and does not have property/.test(message)) {
    return 'the schema has an unresolvable $ref';
  }
  if (name === 'InvalidSchemaError') return 'the schema does not conform to its meta-schema';
  if (message.startsWith('Encountered unknown dialect') || message.startsWith('Unrecognized vocabulary')) {
    return 'the schema names a $schema this guardrail does not support';
  }
  if (error instanceof RangeError) return 'the schema recurses without end';
  return 'the schema could not be prepared';
}

// Walks the DETAILED output tree: each node is a failing keyword (an applicator's node holds
// the failures under it); a failing `false` subschema is named `false`, at its own location.
function failuresOf(errors: readonly OutputUnit[]): SchemaFailure[] {
  const seen = new Set<string>();
  const failures: SchemaFailure[] = [];
  const visit = (units: readonly OutputUnit[]): void => {
    for (const unit of units) {
      const failure = { pointer: jsonPointerOf(unit.instanceLocation), keyword: keywordOf(unit) };
      const key = `${failure.keyword}\u0000${failure.pointer}`;
      if (!seen.has(key)) {
        seen.add(key);
        failures.push(failure);
      }
      if (unit.errors !== undefined) visit(unit.errors);
    }
  };
  visit(errors);
  return failures;
}

// The keyword's name as the schema spells it: the last segment of its schema location.
function keywordOf(unit: OutputUnit): string {
  if (unit.keyword === FALSE_SCHEMA_KEYWORD) return 'false';
  const fragment = unit.absoluteKeywordLocation.slice(unit.absoluteKeywordLocation.indexOf('#') + 1);
  const last = decodeURI(fragment).split('/').pop() ?? '';
  return last.replace(/~1/g, '/').replace(/~0/g, '~');
}

// The interpreter reports a URI fragment (`#/a%20b/0`; `#*/name` for a property name checked by
// `propertyNames`); the record wants RFC 6901 (`/a b/0`, `/name`).
function jsonPointerOf(instanceLocation: string): string {
  return decodeURI(instanceLocation.replace(/^#\*?/, ''));
}

function unusable(reason: string): { readonly ok: false; readonly code: 'SCHEMA.UNUSABLE'; readonly reason: string } {
  return { ok: false, code: 'SCHEMA.UNUSABLE', reason };
}

function partialDeny(reason: string): GuardrailVerdict {
  return { action: 'deny', outcome: 'partial', detections: ['schema.unusable'], reason };
}
