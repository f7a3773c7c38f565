// The interpreter's runtime: a compiled schema is a list of keyword nodes; evaluating it walks
// them against an instance with one explicit Evaluation that carries the instance location, the
// failures so far, the dynamic scope (for `$dynamicRef`/`$recursiveRef`), the references being
// followed (to catch cycles) and the evaluated-properties/items annotations that
// `unevaluatedProperties`/`unevaluatedItems` read. No code is generated: keyword nodes are
// closures built once per schema.
import { type JsonValue } from '@gatehouse/contracts';
import { type PathSegment, pointerStep } from './json-pointer.js';
import { EvaluationDepthError, ReferenceCycleError } from './problems.js';

/** One failing keyword: where in the instance (an RFC 6901 pointer) and which keyword. */
export interface SchemaFailure {
  readonly pointer: string;
  readonly keyword: string;
}

/**
 * The verdict alone, for the fast path: no failures, no locations, no annotations. For a pure
 * assertion it is the very function that `evaluate` is (both ignore what they do not need).
 */
export type Predicate = (instance: JsonValue, assertsFormats: boolean) => boolean;

/** A keyword of a compiled schema: its name (as failures report it) and its check. */
export interface KeywordNode {
  readonly keyword: string;
  /** True when the instance passes; failures of subschemas are recorded on the evaluation. */
  readonly evaluate: (instance: JsonValue, evaluation: Evaluation) => boolean;
  /**
   * The same verdict as `evaluate`, as a predicate; undefined for the keywords that need the
   * evaluation's state (the dynamic scope, annotations), which only the interpreter keeps.
   */
  readonly test: Predicate | undefined;
}

/** A schema resource as the runtime sees it: what a dynamic reference can land on in it. */
export interface CompiledResource {
  readonly uri: string;
  /** 2020-12: the resource's `$dynamicAnchor`s, compiled. */
  readonly dynamicAnchors: Map<string, CompiledSchema>;
  /** 2019-09: the resource's root, when it has `$recursiveAnchor: true`. */
  recursiveRoot: CompiledSchema | undefined;
}

/** A schema ready to evaluate: `true`/`false`, or a schema object's keyword nodes. */
export class CompiledSchema {
  /** Filled in by the compiler after creation, so that references can point at it first. */
  keywords: readonly KeywordNode[] = [];
  /** The schemas its keywords apply or reference, filled in with `keywords` (for linking, see fast-path.ts). */
  children: readonly CompiledSchema[] = [];
  /**
   * The schema's predicate once linked (fast-path.ts): set only when neither it nor anything it
   * reaches needs the interpreter's state; `null` when it was found to need it.
   */
  test: Predicate | null | undefined = undefined;
  /** Once linked with a predicate: the most schema objects nested on any path from it, itself included. */
  height = 0;

  constructor(
    /** For a boolean schema, its value; undefined for a schema object. */
    readonly constant: boolean | undefined,
    /** The resource the schema object belongs to (undefined for boolean schemas). */
    readonly resource: CompiledResource | undefined,
  ) {}
}

export const TRUE_SCHEMA = new CompiledSchema(true, undefined);
TRUE_SCHEMA.test = () => true;
export const FALSE_SCHEMA = new CompiledSchema(false, undefined);
FALSE_SCHEMA.test = () => false;

/**
 * The evaluated properties and items of one instance location, as the successful subschemas
 * applied to it so far have annotated them.
 */
export interface Annotations {
  properties: Set<string> | undefined;
  allProperties: boolean;
  /** Items `0 … itemCount - 1` are evaluated (`prefixItems`, array-form `items`). */
  itemCount: number;
  allItems: boolean;
  /** 2020-12: items `contains` matched. */
  containedItems: Set<number> | undefined;
}

/**
 * Schema evaluations that may nest (each subschema, each reference followed) before the
 * evaluation gives up. Node's default stack held some 2,000 of them in the worst case measured
 * (interpreted, not yet optimised code); a tool's arguments need far fewer, and checking a
 * schema against its meta-schema takes about five per level of the schema. Should a host's
 * stack still run out first, the RangeError is caught and reported the same way.
 */
export const MAX_EVALUATION_DEPTH = 1000;

/** The state of one validation of one instance. */
export class Evaluation {
  /** The instance location being evaluated, as segments; its pointer is built only on failure. */
  readonly path: PathSegment[] = [];
  // `pointers[k]` is the pointer of the first k segments, for k < `pointersValid`: failures at
  // one location, and at its children, share the strings already built.
  private readonly pointers: string[] = [''];
  private pointersValid = 1;
  readonly failures: SchemaFailure[] = [];
  /**
   * Whether failures are being recorded. Off under `not`, `if` and `contains`, whose
   * subschemas' failures are not failures of the instance: a schema object then stops at its
   * first failing keyword.
   */
  collect = true;
  /** The current location's annotations (only while `tracksAnnotations`); created on first write. */
  annotations: Annotations | undefined = undefined;
  /** Set by a keyword node that fails under another keyword's name (`then`, `maxContains`, …). */
  failedAs: string | undefined = undefined;
  /** The resources entered, outermost first: the dynamic scope. */
  readonly scope: CompiledResource[] = [];
  private depth = 0;
  private readonly referenceTargets: CompiledSchema[] = [];
  private readonly referenceDepths: number[] = [];

  constructor(
    /** Whether `format` is asserted (it is for tool arguments, not while checking a schema against its meta-schema). */
    readonly assertsFormats: boolean,
    /** Whether the schema has `unevaluatedProperties`/`unevaluatedItems`, whose annotations then must be kept. */
    readonly tracksAnnotations: boolean,
    /** Whether linked predicates may settle subschemas (off only for the reference the fast path is tested against). */
    private readonly usesPredicates = true,
  ) {}

  /**
   * Whether a schema's predicate may settle it here: a subschema that passes records no
   * failures, and one with a predicate reaches no dynamic reference and no cycle. Not while
   * annotations are tracked (a passing subschema's annotations may be read above it), nor where
   * interpreting it could reach the depth limit (the predicate would then say more than the
   * interpreter does).
   */
  maySettle(schema: CompiledSchema): boolean {
    return this.usesPredicates && !this.tracksAnnotations && this.depth + schema.height <= MAX_EVALUATION_DEPTH;
  }

  /** Moves to a child location. */
  enterLocation(segment: PathSegment): void {
    this.path.push(segment);
  }

  /** Moves back to the parent location. */
  leaveLocation(): void {
    this.path.pop();
    if (this.pointersValid > this.path.length + 1) this.pointersValid = this.path.length + 1;
  }

  /** The RFC 6901 pointer of the current location. */
  pointer(): string {
    const path = this.path;
    for (let k = this.pointersValid - 1; k < path.length; k++) this.pointers[k + 1] = (this.pointers[k] as string) + pointerStep(path[k] as PathSegment);
    this.pointersValid = path.length + 1;
    return this.pointers[path.length] as string;
  }

  enter(): void {
    if (++this.depth > MAX_EVALUATION_DEPTH) throw new EvaluationDepthError(`evaluation nests deeper than ${MAX_EVALUATION_DEPTH} schemas`);
  }

  leave(): void {
    this.depth--;
  }

  /**
   * Starts following a reference to `target`. The same target already being followed at the
   * same instance location (same path length: the location only grows while nested) means
   * no progress is possible: a cycle.
   */
  beginReference(target: CompiledSchema, keyword: string): void {
    const depth = this.path.length;
    for (let i = this.referenceTargets.length - 1; i >= 0 && this.referenceDepths[i] === depth; i--) {
      if (this.referenceTargets[i] === target) throw new ReferenceCycleError(keyword, this.pointer());
    }
    this.referenceTargets.push(target);
    this.referenceDepths.push(depth);
  }

  endReference(): void {
    this.referenceTargets.pop();
    this.referenceDepths.pop();
  }
}

/**
 * The verdict of a schema's predicate (fast-path.ts), where the evaluation allows it (see
 * `maySettle`); undefined where the schema must be interpreted.
 */
export function settledVerdict(schema: CompiledSchema, instance: JsonValue, evaluation: Evaluation): boolean | undefined {
  const test = schema.test;
  return test && evaluation.maySettle(schema) ? test(instance, evaluation.assertsFormats) : undefined;
}

/** Evaluates a schema at the current instance location; records failures when collecting. */
export function evaluateSchema(schema: CompiledSchema, instance: JsonValue, evaluation: Evaluation): boolean {
  if (schema.constant !== undefined) {
    if (!schema.constant && evaluation.collect) evaluation.failures.push({ pointer: evaluation.pointer(), keyword: 'false' });
    return schema.constant;
  }
  evaluation.enter();
  const scope = evaluation.scope;
  const resource = schema.resource as CompiledResource;
  const entersResource = scope[scope.length - 1] !== resource;
  if (entersResource) scope.push(resource);
  let valid = true;
  const keywords = schema.keywords;
  for (let i = 0; i < keywords.length; i++) {
    const keyword = keywords[i] as KeywordNode;
    const mark = evaluation.failures.length;
    if (keyword.evaluate(instance, evaluation)) continue;
    valid = false;
    const name = evaluation.failedAs ?? keyword.keyword;
    evaluation.failedAs = undefined;
    if (!evaluation.collect) break;
    // Before the failures of its subschemas: the list reads like the schema, outside in.
    evaluation.failures.splice(mark, 0, { pointer: evaluation.pointer(), keyword: name });
  }
  if (entersResource) scope.pop();
  evaluation.leave();
  return valid;
}

/**
 * Evaluates a subschema at a child location (a property or an item), with that location's own
 * annotations. A child its predicate finds valid is settled by it: most children of an invalid
 * instance are valid. One it finds invalid is interpreted for its failures (the predicate's
 * work up to the failure is then done twice: the price of keeping the interpreter the one
 * source of failures). The same location's own applicators (`$ref`, `allOf`, …) are
 * interpreted without asking first, since they fail with it.
 */
export function evaluateAt(schema: CompiledSchema, value: JsonValue, segment: PathSegment, evaluation: Evaluation): boolean {
  if (settledVerdict(schema, value, evaluation) === true) return true;
  const saved = evaluation.annotations;
  evaluation.annotations = undefined;
  evaluation.enterLocation(segment);
  const valid = evaluateSchema(schema, value, evaluation);
  evaluation.leaveLocation();
  evaluation.annotations = saved;
  return valid;
}

/** Evaluates a subschema at the same location; its annotations count only if it passes. */
export function evaluateInPlace(schema: CompiledSchema, instance: JsonValue, evaluation: Evaluation): boolean {
  if (!evaluation.tracksAnnotations) return evaluateSchema(schema, instance, evaluation);
  const outer = evaluation.annotations;
  evaluation.annotations = undefined;
  const valid = evaluateSchema(schema, instance, evaluation);
  const inner = evaluation.annotations;
  evaluation.annotations = outer;
  if (valid && inner !== undefined) mergeAnnotations(annotationsOf(evaluation), inner);
  return valid;
}

/** Evaluates a subschema at the same location for its result alone: no failures, no annotations. */
export function passes(schema: CompiledSchema, instance: JsonValue, evaluation: Evaluation): boolean {
  const settled = settledVerdict(schema, instance, evaluation);
  if (settled !== undefined) return settled;
  const collect = evaluation.collect;
  const outer = evaluation.annotations;
  evaluation.collect = false;
  evaluation.annotations = undefined;
  const valid = evaluateSchema(schema, instance, evaluation);
  evaluation.collect = collect;
  evaluation.annotations = outer;
  return valid;
}

/** Follows a reference (`$ref`, `$dynamicRef`, `$recursiveRef`) to an already chosen target. */
export function followReference(target: CompiledSchema, keyword: string, instance: JsonValue, evaluation: Evaluation): boolean {
  evaluation.beginReference(target, keyword);
  const valid = evaluateInPlace(target, instance, evaluation);
  evaluation.endReference();
  return valid;
}

/** The current location's annotations, created on first use. */
export function annotationsOf(evaluation: Evaluation): Annotations {
  let annotations = evaluation.annotations;
  if (annotations === undefined) {
    annotations = { properties: undefined, allProperties: false, itemCount: 0, allItems: false, containedItems: undefined };
    evaluation.annotations = annotations;
  }
  return annotations;
}

export function mergeAnnotations(into: Annotations, from: Annotations): void {
  if (from.allProperties) into.allProperties = true;
  else if (from.properties !== undefined && !into.allProperties) {
    into.properties ??= new Set();
    for (const name of from.properties) into.properties.add(name);
  }
  if (from.allItems) into.allItems = true;
  if (from.itemCount > into.itemCount) into.itemCount = from.itemCount;
  if (from.containedItems !== undefined) {
    into.containedItems ??= new Set();
    for (const index of from.containedItems) into.containedItems.add(index);
  }
}

export function markPropertyEvaluated(evaluation: Evaluation, name: string): void {
  const annotations = annotationsOf(evaluation);
  if (!annotations.allProperties) (annotations.properties ??= new Set()).add(name);
}

export function isPropertyEvaluated(annotations: Annotations | undefined, name: string): boolean {
  return annotations !== undefined && (annotations.allProperties || annotations.properties?.has(name) === true);
}

export function isItemEvaluated(annotations: Annotations | undefined, index: number): boolean {
  return annotations !== undefined && (annotations.allItems || index < annotations.itemCount || annotations.containedItems?.has(index) === true);
}
