// Turns schema objects into CompiledSchemas, each exactly once per compiler. A schema is
// created empty and its keywords are compiled from a work list, so references (cyclic ones
// included) point at the empty schema first and the compiler never recurses: a deeply nested
// or self-referencing schema cannot overflow the stack here.
import { type JsonObject, type JsonValue, isJsonObject } from '@gatehouse/contracts';
import { refReplacesSiblings } from './dialects.js';
import { type CompiledResource, CompiledSchema, FALSE_SCHEMA, type KeywordNode, TRUE_SCHEMA } from './evaluation.js';
import { KEYWORDS, type KeywordContext, RUNS_LAST } from './keywords.js';
import { SchemaProblemError } from './problems.js';
import { type ResolvedReference, type SchemaRegistry, type SchemaResource } from './schema-index.js';

interface PendingSchema {
  readonly schema: CompiledSchema;
  readonly node: JsonObject;
  readonly resource: SchemaResource;
}

/**
 * Compiles the schemas of one registry. A compiler given a `metaSchemas` compiler leaves the
 * bundled meta-schemas to it, so they are compiled once per process, not once per schema.
 */
export class SchemaCompiler {
  private readonly compiled = new Map<object, CompiledSchema>();
  private readonly resources = new Map<SchemaResource, CompiledResource>();
  private readonly pending: PendingSchema[] = [];
  // What the current `compile` call added, to forget should it fail.
  private readonly createdSchemas: object[] = [];
  private readonly createdResources: SchemaResource[] = [];
  private readsAnnotations = false;

  constructor(
    private readonly registry: SchemaRegistry,
    private readonly metaSchemas?: SchemaCompiler,
  ) {}

  /** Whether any schema compiled so far (or by the meta-schema compiler) has `unevaluated*`. */
  get needsAnnotations(): boolean {
    return this.readsAnnotations || (this.metaSchemas?.needsAnnotations ?? false);
  }

  /**
   * The compiled form of `node`, a schema in `resource` (or in the resource it starts), compiled
   * in full. All or nothing: when a keyword cannot be compiled, everything this call created is
   * forgotten, so a later call can never find a schema left half compiled (with fewer keywords
   * than it has, accepting what it should not). That matters for the meta-schema compiler,
   * which lives as long as the process and can be pointed at any location in a meta-schema.
   */
  compile(node: JsonValue, resource: SchemaResource): CompiledSchema {
    this.createdSchemas.length = 0;
    this.createdResources.length = 0;
    try {
      const schema = this.schemaFor(node, resource);
      this.drain();
      return schema;
    } catch (error) {
      this.pending.length = 0;
      for (const created of this.createdSchemas) this.compiled.delete(created);
      for (const created of this.createdResources) this.resources.delete(created);
      throw error;
    }
  }

  // Returns the (possibly still empty) compiled schema for a node, queueing its keywords.
  private schemaFor(node: JsonValue, inherited: SchemaResource): CompiledSchema {
    if (node === true) return TRUE_SCHEMA;
    if (node === false) return FALSE_SCHEMA;
    if (!isJsonObject(node)) throw new SchemaProblemError('INVALID_KEYWORD', 'the schema has a subschema that is neither an object nor a boolean');
    const resource = this.registry.resourceOf(node) ?? inherited;
    if (this.metaSchemas !== undefined && resource.origin === 'meta') return this.metaSchemas.compile(node, resource);
    let schema = this.compiled.get(node);
    if (schema === undefined) {
      schema = new CompiledSchema(undefined, this.compiledResource(resource));
      this.compiled.set(node, schema);
      this.createdSchemas.push(node);
      this.pending.push({ schema, node, resource });
    }
    return schema;
  }

  // A resource's runtime form. Its dynamic and recursive anchors are compiled as soon as any of
  // its schemas is: the resource may then be in the dynamic scope, where a `$dynamicRef` or
  // `$recursiveRef` can land on them.
  private compiledResource(resource: SchemaResource): CompiledResource {
    let compiled = this.resources.get(resource);
    if (compiled !== undefined) return compiled;
    compiled = { uri: resource.uri, dynamicAnchors: new Map(), recursiveRoot: undefined };
    this.resources.set(resource, compiled);
    this.createdResources.push(resource);
    for (const [name, node] of resource.dynamicAnchors) compiled.dynamicAnchors.set(name, this.schemaFor(node, resource));
    if (resource.recursiveAnchor) compiled.recursiveRoot = this.schemaFor(resource.root, resource);
    return compiled;
  }

  private drain(): void {
    for (let next = this.pending.pop(); next !== undefined; next = this.pending.pop()) {
      const children: CompiledSchema[] = [];
      next.schema.keywords = this.compileKeywords(next.node, next.resource, children);
      next.schema.children = children;
    }
  }

  private compileKeywords(node: JsonObject, resource: SchemaResource, children: CompiledSchema[]): KeywordNode[] {
    const dialect = resource.dialect;
    const context = this.contextFor(node, resource, children);
    // Drafts 4–7: `$ref` stands for the whole schema object.
    const ref = node['$ref'];
    if (refReplacesSiblings(dialect.draft) && typeof ref === 'string') {
      const only = KEYWORDS.get('$ref')?.(ref, context);
      return only === undefined ? [] : [only];
    }
    const first: KeywordNode[] = [];
    const last: KeywordNode[] = [];
    for (const keyword of Object.keys(node)) {
      if (!dialect.keywords.has(keyword)) continue;
      const compileKeyword = KEYWORDS.get(keyword);
      const compiled = compileKeyword?.(node[keyword] as JsonValue, context);
      if (compiled !== undefined) (RUNS_LAST.has(keyword) ? last : first).push(compiled);
    }
    return first.concat(last);
  }

  // `children` collects every schema the keywords apply or reference, for linking the fast path.
  private contextFor(node: JsonObject, resource: SchemaResource, children: CompiledSchema[]): KeywordContext {
    const dialect = resource.dialect;
    return {
      draft: dialect.draft,
      sibling: (keyword) => (dialect.keywords.has(keyword) && Object.hasOwn(node, keyword) ? node[keyword] : undefined),
      subschema: (value) => {
        const schema = this.schemaFor(value, resource);
        children.push(schema);
        return schema;
      },
      reference: (reference) => {
        const target = this.reference(reference, resource);
        children.push(target.schema);
        return target;
      },
      needsAnnotations: () => {
        this.readsAnnotations = true;
      },
    };
  }

  private reference(reference: string, resource: SchemaResource): { schema: CompiledSchema; resolved: ResolvedReference } {
    const resolved = this.registry.resolve(reference, resource.uri);
    return { schema: this.schemaFor(resolved.node, resolved.resource), resolved };
  }
}
