// Where `$ref` can go: every schema resource of a document by its canonical URI, the anchors in
// it, and, for each schema object, the resource it belongs to (whose URI is its base URI).
// Only schema positions are walked, per draft: an `$id` or `$anchor` inside an `enum`, `const`,
// `default` or `examples` value, or inside an unknown keyword, is data, not an identifier; and
// in drafts 4 to 7 a schema object with `$ref` is not looked into at all (its siblings, `$id`
// included, are ignored).
import { type JsonObject, type JsonValue, isJsonObject } from '@gatehouse/contracts';
import { type Dialect, STANDARD_DIALECTS, draftOfMetaSchema, idKeyword, refReplacesSiblings, subschemaKeywords } from './dialects.js';
import { parsePointer } from './json-pointer.js';
import { SchemaProblemError } from './problems.js';
import { normalizeUri, resolveUri, splitFragment } from './uri.js';

/** Where a document came from: the schema being prepared, `remotes`, or the bundled meta-schemas. */
export type SchemaOrigin = 'schema' | 'remote' | 'meta';

/** A schema resource: a schema object with its own base URI, and the anchors defined in it. */
export interface SchemaResource {
  /** The canonical URI: absolute, without fragment. */
  readonly uri: string;
  readonly root: JsonValue;
  readonly dialect: Dialect;
  readonly origin: SchemaOrigin;
  /** Plain-name fragments: `$anchor`, `$dynamicAnchor`, and drafts 4–7 `id`/`$id` of the form `#name`. */
  readonly anchors: Map<string, JsonValue>;
  /** 2020-12 `$dynamicAnchor`s, which `$dynamicRef` looks up along the dynamic scope. */
  readonly dynamicAnchors: Map<string, JsonValue>;
  /** 2019-09: the resource's root has `$recursiveAnchor: true`. */
  recursiveAnchor: boolean;
}

/** A `$ref` resolved to a schema position. */
export interface ResolvedReference {
  readonly node: JsonValue;
  /** The resource the node belongs to (its own, if it starts one). */
  readonly resource: SchemaResource;
  /** The resource the reference's URI named, and the plain-name fragment if it used one. */
  readonly namedResource: SchemaResource;
  readonly anchor: string | undefined;
}

interface PendingNode {
  readonly node: JsonValue;
  readonly resource: SchemaResource;
}

/** The resources and anchors of a set of documents of one origin. */
export class SchemaIndex {
  private readonly resources = new Map<string, SchemaResource>();
  private readonly owners = new Map<object, SchemaResource>();

  constructor(readonly origin: SchemaOrigin) {}

  /**
   * Indexes a document retrieved from (or given as) `retrievalUri`, read in `dialect` unless a
   * resource in it names another draft with `$schema`. Returns the document's root resource.
   */
  addDocument(root: JsonValue, retrievalUri: string, dialect: Dialect): SchemaResource {
    const documentUri = normalizeUri(splitFragment(retrievalUri).uri);
    const rootResource = this.resourceFor(root, documentUri, dialect);
    this.register(documentUri, rootResource);
    // An explicit stack, not recursion: a document's depth is bounded by plainCopy, but the
    // walk should not add to the caller's stack either way.
    const pending: PendingNode[] = [{ node: root, resource: rootResource }];
    for (let next = pending.pop(); next !== undefined; next = pending.pop()) {
      this.indexNode(next.node, next.resource, pending, next.node === root ? rootResource : undefined);
    }
    return rootResource;
  }

  resource(uri: string): SchemaResource | undefined {
    return this.resources.get(uri);
  }

  resourceOf(node: object): SchemaResource | undefined {
    return this.owners.get(node);
  }

  // The resource a document's root starts: its `$id` if it has one, else the retrieval URI.
  private resourceFor(root: JsonValue, documentUri: string, dialect: Dialect): SchemaResource {
    let uri = documentUri;
    let rootDialect = dialect;
    if (isJsonObject(root)) {
      rootDialect = embeddedDialect(root, dialect);
      const id = refReplacesSiblings(rootDialect.draft) && typeof root['$ref'] === 'string' ? undefined : declaredId(root, rootDialect);
      if (id !== undefined && splitFragment(id).uri !== '') uri = normalizeUri(resolveUri(splitFragment(id).uri, documentUri));
    }
    const resource = newResource(uri, root, rootDialect, this.origin);
    this.register(uri, resource);
    return resource;
  }

  private indexNode(node: JsonValue, inherited: SchemaResource, pending: PendingNode[], documentRoot: SchemaResource | undefined): void {
    if (!isJsonObject(node)) return;
    let resource = documentRoot ?? inherited;
    const ignoresSiblings = refReplacesSiblings(inherited.dialect.draft) && typeof node['$ref'] === 'string';
    if (!ignoresSiblings && documentRoot === undefined) resource = this.resourceStartedBy(node, inherited) ?? inherited;
    this.owners.set(node, resource);
    if (ignoresSiblings) return;
    this.registerAnchors(node, resource);
    const keywords = subschemaKeywords(resource.dialect.draft);
    for (const keyword of keywords.single) {
      const value = ownValue(node, keyword);
      if (value !== undefined && !Array.isArray(value)) pending.push({ node: value, resource });
    }
    for (const keyword of keywords.arrays) {
      const value = ownValue(node, keyword);
      if (Array.isArray(value)) for (const item of value) pending.push({ node: item, resource });
    }
    for (const keyword of keywords.maps) {
      const value = ownValue(node, keyword);
      if (!isJsonObject(value)) continue;
      for (const name of Object.keys(value)) {
        const child = value[name] as JsonValue;
        if (!Array.isArray(child)) pending.push({ node: child, resource });
      }
    }
  }

  // A schema object with an `$id` (`id` in draft 4) that has more than a fragment starts a resource.
  private resourceStartedBy(node: JsonObject, inherited: SchemaResource): SchemaResource | undefined {
    const dialect = embeddedDialect(node, inherited.dialect);
    const id = declaredId(node, dialect);
    if (id === undefined) return undefined;
    const { uri: idUri } = splitFragment(id);
    if (idUri === '') return undefined;
    const uri = normalizeUri(resolveUri(idUri, inherited.uri));
    const resource = newResource(uri, node, dialect, this.origin);
    this.register(uri, resource);
    return resource;
  }

  private registerAnchors(node: JsonObject, resource: SchemaResource): void {
    const draft = resource.dialect.draft;
    if (draft === '4' || draft === '7') {
      // Drafts 4–7 spell a location-independent identifier as an `id`/`$id` with a fragment.
      const id = declaredId(node, resource.dialect);
      const fragment = id === undefined ? '' : splitFragment(id).fragment;
      if (fragment !== '') setOnce(resource.anchors, fragment, node);
      return;
    }
    const anchor = node['$anchor'];
    if (typeof anchor === 'string') setOnce(resource.anchors, anchor, node);
    if (draft === '2020-12') {
      const dynamicAnchor = node['$dynamicAnchor'];
      if (typeof dynamicAnchor === 'string') {
        setOnce(resource.anchors, dynamicAnchor, node);
        setOnce(resource.dynamicAnchors, dynamicAnchor, node);
      }
    } else if (node === resource.root && node['$recursiveAnchor'] === true) {
      resource.recursiveAnchor = true;
    }
  }

  // The first document to claim a URI keeps it: a later `$id` cannot take over a resource.
  private register(uri: string, resource: SchemaResource): void {
    if (!this.resources.has(uri)) this.resources.set(uri, resource);
  }
}

/** The documents `$ref` can reach, looked up in order: the schema, then `remotes`, then the meta-schemas. */
export class SchemaRegistry {
  constructor(private readonly indexes: readonly SchemaIndex[]) {}

  resource(uri: string): SchemaResource | undefined {
    for (const index of this.indexes) {
      const found = index.resource(uri);
      if (found !== undefined) return found;
    }
    return undefined;
  }

  resourceOf(node: JsonValue): SchemaResource | undefined {
    if (typeof node !== 'object' || node === null) return undefined;
    for (const index of this.indexes) {
      const found = index.resourceOf(node);
      if (found !== undefined) return found;
    }
    return undefined;
  }

  /** Resolves `reference` against `base`; throws UNRESOLVABLE_REF when it reaches nothing here. */
  resolve(reference: string, base: string): ResolvedReference {
    const target = splitFragment(resolveUri(reference, base));
    const namedResource = this.resource(normalizeUri(target.uri));
    if (namedResource === undefined) throw unresolvable();
    let fragment: string;
    try {
      fragment = decodeURIComponent(target.fragment);
    } catch {
      throw unresolvable();
    }
    if (fragment === '') return { node: namedResource.root, resource: namedResource, namedResource, anchor: undefined };
    if (!fragment.startsWith('/')) {
      const node = namedResource.anchors.get(fragment);
      if (node === undefined) throw unresolvable();
      return { node, resource: this.resourceOf(node) ?? namedResource, namedResource, anchor: fragment };
    }
    return this.followPointer(namedResource, fragment);
  }

  // A JSON Pointer fragment may pass into an embedded resource; the node then belongs to it.
  private followPointer(namedResource: SchemaResource, pointer: string): ResolvedReference {
    const tokens = parsePointer(pointer);
    if (tokens === undefined) throw unresolvable();
    let node: JsonValue = namedResource.root;
    let resource = namedResource;
    for (const token of tokens) {
      let next: JsonValue | undefined;
      if (Array.isArray(node)) next = /^(?:0|[1-9]\d*)$/u.test(token) ? node[Number(token)] : undefined;
      else if (isJsonObject(node)) next = ownValue(node, token);
      if (next === undefined) throw unresolvable();
      node = next;
      resource = this.resourceOf(node) ?? resource;
    }
    return { node, resource, namedResource, anchor: undefined };
  }
}

function newResource(uri: string, root: JsonValue, dialect: Dialect, origin: SchemaOrigin): SchemaResource {
  return { uri, root, dialect, origin, anchors: new Map(), dynamicAnchors: new Map(), recursiveAnchor: false };
}

// A resource may switch drafts with its own `$schema` naming one of the four.
function embeddedDialect(node: JsonObject, inherited: Dialect): Dialect {
  const declared = node['$schema'];
  if (typeof declared !== 'string') return inherited;
  const draft = draftOfMetaSchema(declared);
  return draft === undefined || draft === inherited.draft ? inherited : STANDARD_DIALECTS[draft];
}

function declaredId(node: JsonObject, dialect: Dialect): string | undefined {
  const id = node[idKeyword(dialect.draft)];
  return typeof id === 'string' ? id : undefined;
}

function ownValue(node: JsonObject, key: string): JsonValue | undefined {
  return Object.hasOwn(node, key) ? node[key] : undefined;
}

function setOnce(map: Map<string, JsonValue>, key: string, value: JsonValue): void {
  if (!map.has(key)) map.set(key, value);
}

function unresolvable(): SchemaProblemError {
  return new SchemaProblemError('UNRESOLVABLE_REF', 'the schema has an unresolvable $ref');
}
