// The fast path: a schema's verdict as one tree of predicates, linked once per compiled schema
// from the predicates its keyword nodes carry. It keeps no state at all (no failures, no
// instance location, no annotations, no dynamic scope) and stops at the first failing keyword,
// so a valid instance costs little more than the checks themselves. The interpreter
// (evaluation.ts) stays the one source of failures: validation runs it whenever the predicate
// says no, so what a failure names cannot differ between the two paths.
//
// A schema gets a predicate only when nothing it reaches needs what the predicate does not keep:
// a dynamic `$dynamicRef`/`$recursiveRef` (the dynamic scope), `unevaluated*` (annotations), or
// a reference cycle (the interpreter detects a cycle without progress and bounds the depth of
// recursion). Everything else, static `$ref`s included, is linked ahead of time: a `$ref`'s
// predicate is its target's.
import { type CompiledSchema, MAX_EVALUATION_DEPTH, type Predicate } from './evaluation.js';

// Subschemas nest at most this deep on any path of a linked schema. Below the interpreter's
// limit, so a schema with a fast path can never be too deep for the interpreter either (and
// the linker's own recursion stays shallow).
const MAX_LINKED_HEIGHT = Math.min(256, MAX_EVALUATION_DEPTH);

const ALWAYS: Predicate = () => true;

/**
 * Links `root` (and everything it reaches) into predicates and returns its own, or undefined
 * when it needs the interpreter. Idempotent: each schema is linked once, whoever asks first.
 */
export function linkFastPath(root: CompiledSchema): Predicate | undefined {
  return link(root, new Set()) ?? undefined;
}

// Depth-first. A schema met again while its own link is in progress is on a cycle: neither it
// nor any schema on the way back to it gets a predicate (they are left to the interpreter).
function link(schema: CompiledSchema, visiting: Set<CompiledSchema>): Predicate | null {
  if (schema.test !== undefined) return schema.test;
  if (visiting.has(schema) || visiting.size >= MAX_LINKED_HEIGHT) return null;
  visiting.add(schema);
  let height = 1;
  let linkable = schema.keywords.every((keyword) => keyword.test !== undefined);
  for (const child of schema.children) {
    if (!linkable) break;
    linkable = link(child, visiting) !== null;
    height = Math.max(height, 1 + child.height);
  }
  visiting.delete(schema);
  // Past the height limit a schema is left to the interpreter for good: conservative, and rare.
  schema.test = linkable && height <= MAX_LINKED_HEIGHT ? predicateOf(schema) : null;
  schema.height = height;
  return schema.test;
}

// A schema object holds when each of its keywords does. One keyword's predicate serves as the
// schema's own, without a wrapper call.
function predicateOf(schema: CompiledSchema): Predicate {
  const tests = schema.keywords.map((keyword) => keyword.test as Predicate);
  if (tests.length === 0) return ALWAYS;
  const [first, second] = tests as [Predicate, Predicate];
  if (tests.length === 1) return first;
  // Two keywords (`type` and one bound) are the most common schema object after one.
  if (tests.length === 2) return (instance, assertsFormats) => first(instance, assertsFormats) && second(instance, assertsFormats);
  return (instance, assertsFormats) => {
    for (let i = 0; i < tests.length; i++) if (!(tests[i] as Predicate)(instance, assertsFormats)) return false;
    return true;
  };
}
