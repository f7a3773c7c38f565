// gatehouse's JSON Schema validator (drafts 4, 7, 2019-09 and 2020-12), an interpreter written
// from the specifications: a schema is indexed and compiled once into keyword nodes, whose
// predicates are linked into a fast path for valid instances (fast-path.ts); an invalid one is
// interpreted for its failures (validate.ts). Nothing is fetched: `$ref` reaches the schema itself, the
// `remotes` given in memory and the bundled meta-schemas. Nothing is generated: no `eval`, no
// `new Function`. Expected outcomes (an unusable schema, an invalid or too deeply nested
// instance) are values, not exceptions.
import { type JsonValue, isJsonObject } from '@gatehouse/contracts';
import { SchemaCompiler } from './compiler.js';
import { type Dialect, type Draft, STANDARD_DIALECTS, dialectOfVocabularies, draftOfMetaSchema } from './dialects.js';
import { type CompiledSchema, Evaluation, type Predicate, type SchemaFailure, evaluateSchema } from './evaluation.js';
import { linkFastPath } from './fast-path.js';
import { plainCopy } from './json-value.js';
import { KEYWORDS } from './keywords.js';
import { META_SCHEMAS } from './meta-schemas/index.js';
import { EvaluationDepthError, ReferenceCycleError, type SchemaProblem, SchemaProblemError } from './problems.js';
import { SchemaIndex, SchemaRegistry, type SchemaResource } from './schema-index.js';
import { normalizeUri, splitFragment } from './uri.js';

export { validateInstance } from './validate.js';
export type { Draft } from './dialects.js';
export type { SchemaFailure } from './evaluation.js';
export type { SchemaProblem, SchemaProblemCode } from './problems.js';

/** Every keyword the interpreter implements, in any draft (a failure names one of these, or a name in {@link FAILURE_ALIASES}). */
export const KNOWN_KEYWORDS: readonly string[] = Object.freeze([...KEYWORDS.keys()]);

/** The names a failure can take besides its keyword: a `false` subschema, min/maxContains, then/else. */
export const FAILURE_ALIASES: readonly string[] = Object.freeze(['false', 'minContains', 'maxContains', 'then', 'else']);

/**
 * The retrieval URI of a schema without an `$id`. `.invalid` never resolves (RFC 2606): a
 * relative `$ref` from it reaches only what `remotes` holds.
 */
export const DEFAULT_SCHEMA_URI = 'https://tool-schema.gatehouse.invalid/input.json';

/** `remotes`, indexed once for every schema prepared with them. */
export interface RemoteSchemas {
  readonly index: SchemaIndex;
}

/** A schema ready to validate instances against. */
export interface JsonSchemaValidator {
  readonly root: CompiledSchema;
  /** The dialect the schema was read in: one of the drafts, or `custom` (a meta-schema from `remotes`). */
  readonly dialect: Draft | 'custom';
  readonly needsAnnotations: boolean;
  /** The verdict alone, without interpreting (fast-path.ts); undefined when the schema needs the interpreter throughout. */
  readonly fastPath: Predicate | undefined;
}

export type SchemaPreparation = { readonly ok: true; readonly validator: JsonSchemaValidator } | { readonly ok: false; readonly problem: SchemaProblem };

/** The outcome of validating one instance. `too-deep`: it nests deeper than the evaluation goes. */
export type InstanceValidation =
  | { readonly outcome: 'valid' }
  | { readonly outcome: 'invalid'; readonly failures: readonly SchemaFailure[] }
  | { readonly outcome: 'too-deep' };

/** Indexes `remotes` (URI → schema), each read in `draft` unless it names its own `$schema`. */
export function indexRemotes(remotes: Readonly<Record<string, JsonValue>>, draft: Draft): { readonly ok: true; readonly remotes: RemoteSchemas } | { readonly ok: false; readonly problem: SchemaProblem } {
  try {
    const index = new SchemaIndex('remote');
    for (const uri of Object.keys(remotes)) {
      const remote = remotes[uri] as JsonValue;
      if (typeof remote !== 'boolean' && !isJsonObject(remote)) continue;
      index.addDocument(plainCopy(remote), uri, dialectDeclaredBy(remote) ?? STANDARD_DIALECTS[draft]);
    }
    return { ok: true, remotes: { index } };
  } catch (error) {
    return { ok: false, problem: problemOf(error) };
  }
}

/**
 * Prepares `schema`: reads its dialect (`$schema`, else `draft`), checks it against its
 * meta-schema, resolves every `$ref` it reaches and compiles it.
 */
export function prepareJsonSchema(schema: JsonValue, options: { readonly draft: Draft; readonly remotes?: RemoteSchemas }): SchemaPreparation {
  try {
    if (typeof schema !== 'boolean' && !isJsonObject(schema)) throw new SchemaProblemError('NOT_A_SCHEMA', 'the schema is neither an object nor a boolean');
    // On a plain copy: the caller's schema is never touched, and only its own keys count.
    const copy = plainCopy(schema);
    const remoteIndex = options.remotes?.index ?? new SchemaIndex('remote');
    const { dialect, custom } = dialectOf(copy, options.draft, remoteIndex);
    const index = new SchemaIndex('schema');
    const root = index.addDocument(copy, DEFAULT_SCHEMA_URI, dialect);
    const compiler = new SchemaCompiler(new SchemaRegistry([index, remoteIndex, metaSchemaIndex()]), metaSchemaCompiler());
    checkAgainstMetaSchema(copy, dialect, compiler, remoteIndex);
    const compiled = compiler.compile(copy, root);
    return {
      ok: true,
      validator: { root: compiled, dialect: custom ? 'custom' : dialect.draft, needsAnnotations: compiler.needsAnnotations, fastPath: linkFastPath(compiled) },
    };
  } catch (error) {
    return { ok: false, problem: problemOf(error) };
  }
}

// ——— dialects ———

// The dialect of the schema's `$schema`: one of the drafts, or a custom meta-schema from
// `remotes` (its `$vocabulary` picks the keywords); without `$schema`, the configured draft.
function dialectOf(schema: JsonValue, fallback: Draft, remotes: SchemaIndex): { readonly dialect: Dialect; readonly custom: boolean } {
  if (!isJsonObject(schema) || !Object.hasOwn(schema, '$schema')) return { dialect: STANDARD_DIALECTS[fallback], custom: false };
  const declared = schema['$schema'];
  if (typeof declared !== 'string') throw unsupportedDialect();
  const draft = draftOfMetaSchema(declared);
  if (draft !== undefined) return { dialect: STANDARD_DIALECTS[draft], custom: false };
  return { dialect: customDialect(declared, remotes), custom: true };
}

// A meta-schema given in `remotes`: built on a draft (its own `$schema`, which may be another
// custom meta-schema, a few levels at most), with the vocabularies its `$vocabulary` lists.
function customDialect(uri: string, remotes: SchemaIndex, depth = 0): Dialect {
  const metaSchema = remotes.resource(normalizeUri(splitFragment(uri).uri));
  if (metaSchema === undefined || depth > 4 || !isJsonObject(metaSchema.root)) throw unsupportedDialect();
  const root = metaSchema.root;
  const declared = root['$schema'];
  if (typeof declared !== 'string') throw unsupportedDialect();
  const base = draftOfMetaSchema(declared) ?? customDialect(declared, remotes, depth + 1).draft;
  const vocabulary = root['$vocabulary'];
  if (vocabulary === undefined) return { ...STANDARD_DIALECTS[base], metaSchemaUri: metaSchema.uri };
  if (!isJsonObject(vocabulary) || !Object.values(vocabulary).every((required) => typeof required === 'boolean')) throw unsupportedDialect();
  const dialect = dialectOfVocabularies(base, vocabulary as Record<string, boolean>, metaSchema.uri);
  if ('unknownRequiredVocabulary' in dialect) {
    throw new SchemaProblemError('UNKNOWN_VOCABULARY', 'the schema names a meta-schema that requires a vocabulary this guardrail does not implement');
  }
  return dialect;
}

function dialectDeclaredBy(document: JsonValue): Dialect | undefined {
  if (!isJsonObject(document) || typeof document['$schema'] !== 'string') return undefined;
  const draft = draftOfMetaSchema(document['$schema']);
  return draft === undefined ? undefined : STANDARD_DIALECTS[draft];
}

function unsupportedDialect(): SchemaProblemError {
  return new SchemaProblemError('UNSUPPORTED_DIALECT', 'the schema names a $schema this guardrail does not support');
}

// ——— meta-schemas ———

let metaSchemas: { readonly index: SchemaIndex; readonly compiler: SchemaCompiler } | undefined;

// The bundled meta-schemas, indexed and compiled once per process (lazily: importing the
// interpreter costs nothing until a schema is prepared).
function metaSchemaState(): { readonly index: SchemaIndex; readonly compiler: SchemaCompiler } {
  if (metaSchemas === undefined) {
    const index = new SchemaIndex('meta');
    for (const document of META_SCHEMAS) {
      const dialect = dialectDeclaredBy(document);
      const id = isJsonObject(document) ? (document['$id'] ?? document['id']) : undefined;
      if (dialect === undefined || typeof id !== 'string') throw new Error('a bundled meta-schema lacks $schema or $id');
      index.addDocument(plainCopy(document), id, dialect);
    }
    metaSchemas = { index, compiler: new SchemaCompiler(new SchemaRegistry([index])) };
  }
  return metaSchemas;
}

function metaSchemaIndex(): SchemaIndex {
  return metaSchemaState().index;
}

function metaSchemaCompiler(): SchemaCompiler {
  return metaSchemaState().compiler;
}

// A schema must conform to its meta-schema (a draft's, or the custom one from `remotes`).
// `format` is not asserted here: the meta-schemas use it as an annotation.
function checkAgainstMetaSchema(schema: JsonValue, dialect: Dialect, compiler: SchemaCompiler, remotes: SchemaIndex): void {
  const resource: SchemaResource | undefined = metaSchemaIndex().resource(dialect.metaSchemaUri) ?? remotes.resource(dialect.metaSchemaUri);
  if (resource === undefined) throw unsupportedDialect();
  const metaSchema = compiler.compile(resource.root, resource);
  const evaluation = new Evaluation(false, compiler.needsAnnotations);
  evaluation.collect = false;
  let conforms: boolean;
  try {
    conforms = evaluateSchema(metaSchema, schema, evaluation);
  } catch (error) {
    if (error instanceof EvaluationDepthError || error instanceof RangeError || error instanceof ReferenceCycleError) {
      throw new SchemaProblemError('TOO_DEEP', 'the schema nests too deeply to check against its meta-schema');
    }
    throw error;
  }
  if (!conforms) throw new SchemaProblemError('FAILS_META_SCHEMA', 'the schema does not conform to its meta-schema');
}

// ——— outcomes ———

function problemOf(error: unknown): SchemaProblem {
  if (error instanceof SchemaProblemError) return error.problem;
  if (error instanceof RangeError) return { code: 'TOO_DEEP', message: 'the schema recurses without end' };
  return { code: 'NOT_A_SCHEMA', message: 'the schema could not be prepared' };
}
