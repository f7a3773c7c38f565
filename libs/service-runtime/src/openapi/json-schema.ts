import { GatehouseError } from '@gatehouse/contracts';
import { z } from 'zod';

/** A JSON Schema (draft 2020-12, the dialect of OpenAPI 3.1) as plain data. */
export type JsonSchema = { readonly [keyword: string]: unknown };

/** An OpenAPI parameter object. */
export interface OpenApiParameter {
  readonly name: string;
  readonly in: 'query' | 'path' | 'header';
  readonly required?: boolean;
  readonly description?: string;
  readonly schema: JsonSchema;
}

/**
 * `input`: what a request may carry (before transforms and defaults, extra keys allowed where zod
 * strips them); `output`: what a response carries.
 */
export type SchemaSide = 'input' | 'output';

function convert(schema: z.ZodType, io: SchemaSide): Record<string, unknown> {
  // `any` for what JSON Schema cannot say (a refinement's predicate, a transform's function): the
  // shape around it is still described, and the route's own parser stays the judge.
  const json = z.toJSONSchema(schema, { target: 'draft-2020-12', io, unrepresentable: 'any' }) as Record<string, unknown>;
  delete json['$schema'];
  return json;
}

/** `value` with every `$ref` rewritten by `rewrite` (zod points recursive parts at `#/$defs/...` of its root). */
function rewriteRefs(value: unknown, rewrite: (ref: string) => string): unknown {
  if (Array.isArray(value)) return value.map((item) => rewriteRefs(item, rewrite));
  if (value === null || typeof value !== 'object') return value;
  return Object.fromEntries(
    Object.entries(value).map(([key, item]) => [
      key,
      key === '$ref' && typeof item === 'string' ? rewrite(item) : rewriteRefs(item, rewrite),
    ]),
  );
}

/**
 * The JSON Schemas of zod schemas, as the document's `components.schemas`. A recursive schema (a
 * JSON value) keeps its `$defs`, and its references, relative to its own root in zod's output, are
 * made absolute (`#/components/schemas/<name>/$defs/...`): in an OpenAPI document `#` is the
 * document, not the schema.
 */
export function componentSchemas(schemas: Readonly<Record<string, z.ZodType>>, io: SchemaSide): Record<string, JsonSchema> {
  return Object.fromEntries(
    Object.entries(schemas).map(([name, schema]) => {
      const root = `#/components/schemas/${name}`;
      const absolute = (ref: string) => (ref === '#' ? root : ref.startsWith('#/') ? `${root}${ref.slice(1)}` : ref);
      return [name, rewriteRefs(convert(schema, io), absolute) as JsonSchema];
    }),
  );
}

/** The JSON Schema of a non-recursive zod schema, to be placed anywhere in a document; a recursive one belongs in `componentSchemas`. */
export function inlineSchema(schema: z.ZodType, io: SchemaSide): JsonSchema {
  const json = convert(schema, io);
  // zod writes a recursive schema's references relative to its own root (`#`, `#/$defs/...`).
  if (JSON.stringify(json).includes('"$ref":')) {
    const message = 'a recursive schema must be a component (componentSchemas), not inline';
    throw new GatehouseError('OPENAPI.RECURSIVE_SCHEMA', message, { category: 'internal' });
  }
  return json;
}

/**
 * The parameters of a zod object that validates a query string or path parameters, one per
 * property: required as the object requires it, described by its `.describe()` text or `descriptions`.
 */
export function parametersOf(
  schema: z.ZodType,
  where: 'query' | 'path',
  descriptions: Readonly<Record<string, string>> = {},
): OpenApiParameter[] {
  const json = inlineSchema(schema, 'input');
  const properties = json['properties'];
  if (json['type'] !== 'object' || properties === null || typeof properties !== 'object') {
    throw new GatehouseError('OPENAPI.NOT_AN_OBJECT', 'parameters come from a zod object', { category: 'internal' });
  }
  const requiredNames = new Set(Array.isArray(json['required']) ? (json['required'] as string[]) : []);
  return Object.entries(properties as Record<string, JsonSchema>).map(([name, property]) => {
    const { description, ...propertySchema } = property as JsonSchema & { description?: string };
    const text = descriptions[name] ?? description;
    const required = where === 'path' || requiredNames.has(name);
    return { name, in: where, required, ...(text !== undefined && { description: text }), schema: propertySchema };
  });
}
