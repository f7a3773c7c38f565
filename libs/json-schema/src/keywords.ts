// Each keyword as a compile step: it reads its value (and the siblings it depends on) once,
// and returns the node that checks an instance, or nothing when it has no effect. A keyword
// value the compiler cannot use (a `minLength` that is not a non-negative integer, a `pattern`
// that is not an ECMA-262 regular expression) makes the schema unusable rather than ignored.
import { type JsonObject, type JsonValue, isJsonObject, jsonEqual } from '@gatehouse/contracts';
import { type Draft } from './dialects.js';
import {
  type Annotations,
  type CompiledSchema,
  type Evaluation,
  type KeywordNode,
  type Predicate,
  annotationsOf,
  evaluateAt,
  evaluateInPlace,
  evaluateSchema,
  followReference,
  isItemEvaluated,
  isPropertyEvaluated,
  markPropertyEvaluated,
  mergeAnnotations,
  passes,
  settledVerdict,
} from './evaluation.js';
import { formatCheck } from './formats.js';
import { MAX_VALUE_DEPTH, canonicalKey, codePointLength } from './json-value.js';
import { SchemaProblemError } from './problems.js';
import { type ResolvedReference } from './schema-index.js';

/** What a keyword's compile step may ask of the compiler about the schema object it is in. */
export interface KeywordContext {
  readonly draft: Draft;
  /** The value of a sibling keyword that is on in this dialect, if present. */
  sibling(keyword: string): JsonValue | undefined;
  /** The compiled form of a subschema of this schema object. */
  subschema(value: JsonValue, keyword: string): CompiledSchema;
  /** Resolves a reference against this schema object's base URI, and compiles its target. */
  reference(reference: string): { readonly schema: CompiledSchema; readonly resolved: ResolvedReference };
  /** Says the schema reads annotations (`unevaluated*`), so validation must keep them. */
  needsAnnotations(): void;
}

type KeywordCompiler = (value: JsonValue, context: KeywordContext) => KeywordNode | undefined;

function invalid(keyword: string): SchemaProblemError {
  return new SchemaProblemError('INVALID_KEYWORD', `the schema has an invalid ${keyword}`);
}

function node(keyword: string, evaluate: KeywordNode['evaluate'], test: Predicate | undefined): KeywordNode {
  return { keyword, evaluate, test };
}

// A keyword that looks at the instance alone: one function is both its check and its predicate.
function assertion(keyword: string, check: (instance: JsonValue) => boolean): KeywordNode {
  return { keyword, evaluate: check, test: check };
}

// A linked subschema's predicate. Applicator predicates run only once linking has given every
// schema they reach one (fast-path.ts), so it is there by the time they ask.
function testOf(schema: CompiledSchema): Predicate {
  return schema.test as Predicate;
}

function nonNegativeInteger(value: JsonValue, keyword: string): number {
  if (typeof value !== 'number' || !Number.isInteger(value) || value < 0) throw invalid(keyword);
  return value;
}

function finiteNumber(value: JsonValue, keyword: string): number {
  if (typeof value !== 'number' || !Number.isFinite(value)) throw invalid(keyword);
  return value;
}

function stringArray(value: JsonValue, keyword: string): string[] {
  if (!Array.isArray(value) || !value.every((item) => typeof item === 'string')) throw invalid(keyword);
  return value as string[];
}

function schemaArray(value: JsonValue, keyword: string, context: KeywordContext): CompiledSchema[] {
  if (!Array.isArray(value)) throw invalid(keyword);
  return value.map((item) => context.subschema(item, keyword));
}

function schemaMap(value: JsonValue, keyword: string, context: KeywordContext): [string, CompiledSchema][] {
  if (!isJsonObject(value)) throw invalid(keyword);
  return Object.keys(value).map((name) => [name, context.subschema(value[name] as JsonValue, keyword)]);
}

// An ECMA-262 regular expression, compiled once. Without `g` or `y`, `test` keeps no state.
function regex(source: JsonValue, keyword: string): RegExp {
  if (typeof source !== 'string') throw invalid(keyword);
  try {
    return new RegExp(source, 'u');
  } catch {
    throw new SchemaProblemError('INVALID_PATTERN', `the schema has a ${keyword} that is not a valid regular expression`);
  }
}

// ——— type, enum, const ———

const TYPE_BITS: Readonly<Record<string, number>> = { null: 1, boolean: 2, object: 4, array: 8, number: 16, string: 32, integer: 64 };
const NUMBER_BIT = 16;
const INTEGER_BIT = 64;

// 0 for what is no JSON value at all (`undefined`, NaN, a function): it matches no type.
function typeBitOf(value: JsonValue): number {
  if (value === null) return 1;
  switch (typeof value) {
    case 'boolean':
      return 2;
    case 'number':
      return Number.isFinite(value) ? NUMBER_BIT : 0;
    case 'string':
      return 32;
    case 'object':
      return Array.isArray(value) ? 8 : 4;
    default:
      return 0;
  }
}

// One type, the common case, checked without the bit mask: each is its own small function.
const SINGLE_TYPE_CHECKS: Readonly<Record<string, (instance: JsonValue) => boolean>> = {
  null: (instance) => instance === null,
  boolean: (instance) => typeof instance === 'boolean',
  object: (instance) => isJsonObject(instance),
  array: (instance) => Array.isArray(instance),
  number: (instance) => typeof instance === 'number' && Number.isFinite(instance),
  string: (instance) => typeof instance === 'string',
  integer: (instance) => Number.isInteger(instance),
};

const compileType: KeywordCompiler = (value) => {
  const names = typeof value === 'string' ? [value] : Array.isArray(value) ? value : undefined;
  if (names === undefined) throw invalid('type');
  let mask = 0;
  for (const name of names) {
    const bit = typeof name === 'string' && Object.hasOwn(TYPE_BITS, name) ? TYPE_BITS[name] : undefined;
    if (bit === undefined) throw invalid('type');
    mask |= bit;
  }
  const single = typeof value === 'string' ? SINGLE_TYPE_CHECKS[value] : undefined;
  if (single !== undefined) return assertion('type', single);
  // "integer" is any number with a zero fractional part, however it was written (1.0 included).
  return assertion('type', (instance) => {
    const bit = typeBitOf(instance);
    return (mask & bit) !== 0 || (bit === NUMBER_BIT && (mask & INTEGER_BIT) !== 0 && Number.isInteger(instance));
  });
};

function isPrimitive(value: JsonValue): value is string | number | boolean | null {
  return value === null || typeof value !== 'object';
}

const compileEnum: KeywordCompiler = (value) => {
  if (!Array.isArray(value)) throw invalid('enum');
  // Primitives by Set (1 and 1.0 are one number in JavaScript already); objects and arrays by JSON equality.
  const primitives = new Set<JsonValue>(value.filter(isPrimitive));
  const structured = value.filter((item) => !isPrimitive(item));
  return assertion('enum', (instance) => (isPrimitive(instance) ? primitives.has(instance) : structured.some((item) => jsonEqual(item, instance, MAX_VALUE_DEPTH))));
};

const compileConst: KeywordCompiler = (value) =>
  isPrimitive(value) ? assertion('const', (instance) => instance === value) : assertion('const', (instance) => jsonEqual(value, instance, MAX_VALUE_DEPTH));

// ——— numbers ———

interface Decimal {
  readonly digits: bigint;
  readonly exponent: number;
}

// The exact decimal a JavaScript number prints as (its shortest round-trip form): what the JSON
// text said, for any number that survived parsing. 0.0075 is 75e-4, not 0.00749999….
function decimalOf(value: number): Decimal {
  const [mantissa = '0', exponent = '0'] = String(Math.abs(value)).split('e');
  const [whole = '0', fraction = ''] = mantissa.split('.');
  return { digits: BigInt(whole + fraction), exponent: Number(exponent) - fraction.length };
}

// The same decimal with its digits as a safe integer, when they fit: most numbers a tool is
// given (1.25, 0.5, 3600) are short decimals, which need no BigInt arithmetic.
function smallDecimalOf(value: number): { readonly digits: number; readonly exponent: number } | undefined {
  const text = String(Math.abs(value));
  if (text.includes('e')) return undefined;
  const point = text.indexOf('.');
  const digits = point < 0 ? Number(text) : Number(text.slice(0, point) + text.slice(point + 1));
  return Number.isSafeInteger(digits) ? { digits, exponent: point < 0 ? 0 : point + 1 - text.length } : undefined;
}

// Both decimals brought to one exponent, when the digits stay safe integers; undefined otherwise.
function isSmallMultipleOf(value: number, exactDivisor: Decimal): boolean | undefined {
  const exact = smallDecimalOf(value);
  const divisorDigits = Number(exactDivisor.digits);
  if (exact === undefined || !Number.isSafeInteger(divisorDigits)) return undefined;
  const shift = exact.exponent - exactDivisor.exponent;
  const scaled = shift >= 0 ? exact.digits * 10 ** shift : divisorDigits * 10 ** -shift;
  if (!Number.isSafeInteger(scaled)) return undefined;
  return shift >= 0 ? scaled % divisorDigits === 0 : exact.digits % scaled === 0;
}

function isMultipleOf(value: number, divisor: number, exactDivisor: Decimal): boolean {
  if (Number.isSafeInteger(value) && Number.isSafeInteger(divisor)) return value % divisor === 0;
  const small = isSmallMultipleOf(value, exactDivisor);
  if (small !== undefined) return small;
  const exact = decimalOf(value);
  if (exact.digits === 0n) return true;
  const shift = exact.exponent - exactDivisor.exponent;
  return shift >= 0
    ? (exact.digits * 10n ** BigInt(shift)) % exactDivisor.digits === 0n
    : exact.digits % (exactDivisor.digits * 10n ** BigInt(-shift)) === 0n;
}

const compileMultipleOf: KeywordCompiler = (value) => {
  const divisor = finiteNumber(value, 'multipleOf');
  if (divisor <= 0) throw invalid('multipleOf');
  const exactDivisor = decimalOf(divisor);
  return assertion('multipleOf', (instance) => typeof instance !== 'number' || isMultipleOf(instance, divisor, exactDivisor));
};

// Draft 4 spells exclusive bounds as a boolean beside `maximum`/`minimum`; later drafts as numbers.
function compileBound(keyword: 'maximum' | 'minimum'): KeywordCompiler {
  return (value, context) => {
    const limit = finiteNumber(value, keyword);
    const exclusiveKeyword = keyword === 'maximum' ? 'exclusiveMaximum' : 'exclusiveMinimum';
    const exclusive = context.draft === '4' && context.sibling(exclusiveKeyword) === true;
    if (keyword === 'maximum') {
      return exclusive
        ? assertion(exclusiveKeyword, (instance) => typeof instance !== 'number' || instance < limit)
        : assertion(keyword, (instance) => typeof instance !== 'number' || instance <= limit);
    }
    return exclusive
      ? assertion(exclusiveKeyword, (instance) => typeof instance !== 'number' || instance > limit)
      : assertion(keyword, (instance) => typeof instance !== 'number' || instance >= limit);
  };
}

function compileExclusiveBound(keyword: 'exclusiveMaximum' | 'exclusiveMinimum'): KeywordCompiler {
  return (value, context) => {
    // Draft 4: a boolean modifier of `maximum`/`minimum`, handled there.
    if (context.draft === '4') {
      if (typeof value !== 'boolean') throw invalid(keyword);
      return undefined;
    }
    const limit = finiteNumber(value, keyword);
    return keyword === 'exclusiveMaximum'
      ? assertion(keyword, (instance) => typeof instance !== 'number' || instance < limit)
      : assertion(keyword, (instance) => typeof instance !== 'number' || instance > limit);
  };
}

// ——— strings ———

const compileMaxLength: KeywordCompiler = (value) => {
  const max = nonNegativeInteger(value, 'maxLength');
  // A string has at most as many code points as UTF-16 units: count only when it could matter.
  return assertion('maxLength', (instance) => typeof instance !== 'string' || instance.length <= max || codePointLength(instance) <= max);
};

const compileMinLength: KeywordCompiler = (value) => {
  const min = nonNegativeInteger(value, 'minLength');
  // …and at least half as many.
  return assertion('minLength', (instance) => typeof instance !== 'string' || (instance.length >= min && (instance.length >= 2 * min || codePointLength(instance) >= min)));
};

const compilePattern: KeywordCompiler = (value) => {
  const pattern = regex(value, 'pattern');
  return assertion('pattern', (instance) => typeof instance !== 'string' || pattern.test(instance));
};

const compileFormat: KeywordCompiler = (value) => {
  if (typeof value !== 'string') throw invalid('format');
  const check = formatCheck(value);
  if (check === undefined) return undefined;
  return node(
    'format',
    (instance, evaluation) => typeof instance !== 'string' || !evaluation.assertsFormats || check(instance),
    (instance, assertsFormats) => typeof instance !== 'string' || !assertsFormats || check(instance),
  );
};

// ——— arrays ———

// Evaluates `schema` at items `from` … `to - 1`; in collect mode every item, else up to the first failure.
function evaluateItems(schema: CompiledSchema, items: readonly JsonValue[], from: number, to: number, evaluation: Evaluation): boolean {
  let valid = true;
  for (let i = from; i < to; i++) {
    if (evaluateAt(schema, items[i] as JsonValue, i, evaluation)) continue;
    valid = false;
    if (!evaluation.collect) break;
  }
  return valid;
}

function evaluateTuple(schemas: readonly CompiledSchema[], items: readonly JsonValue[], evaluation: Evaluation): boolean {
  const count = Math.min(schemas.length, items.length);
  let valid = true;
  for (let i = 0; i < count; i++) {
    if (evaluateAt(schemas[i] as CompiledSchema, items[i] as JsonValue, i, evaluation)) continue;
    valid = false;
    if (!evaluation.collect) break;
  }
  if (evaluation.tracksAnnotations) {
    const annotations = annotationsOf(evaluation);
    if (count > annotations.itemCount) annotations.itemCount = count;
  }
  return valid;
}

function markAllItems(evaluation: Evaluation): void {
  if (evaluation.tracksAnnotations) annotationsOf(evaluation).allItems = true;
}

function testItems(schema: CompiledSchema, items: readonly JsonValue[], from: number, assertsFormats: boolean): boolean {
  const test = testOf(schema);
  for (let i = from; i < items.length; i++) if (!test(items[i] as JsonValue, assertsFormats)) return false;
  return true;
}

function testTuple(schemas: readonly CompiledSchema[], items: readonly JsonValue[], assertsFormats: boolean): boolean {
  const count = Math.min(schemas.length, items.length);
  for (let i = 0; i < count; i++) if (!testOf(schemas[i] as CompiledSchema)(items[i] as JsonValue, assertsFormats)) return false;
  return true;
}

// `items`: before 2020-12 a schema for every item or an array of schemas for a tuple; in
// 2020-12 a schema for the items after `prefixItems`.
const compileItems: KeywordCompiler = (value, context) => {
  if (Array.isArray(value)) {
    if (context.draft === '2020-12') throw invalid('items');
    const tuple = schemaArray(value, 'items', context);
    return node(
      'items',
      (instance, evaluation) => !Array.isArray(instance) || evaluateTuple(tuple, instance, evaluation),
      (instance, assertsFormats) => !Array.isArray(instance) || testTuple(tuple, instance, assertsFormats),
    );
  }
  const schema = context.subschema(value, 'items');
  const prefix = context.draft === '2020-12' ? context.sibling('prefixItems') : undefined;
  const from = Array.isArray(prefix) ? prefix.length : 0;
  return itemsFrom('items', schema, from);
};

/** `keyword`'s node: `schema` judges every item from index `from` on, and marks them all evaluated. */
function itemsFrom(keyword: 'items' | 'additionalItems', schema: CompiledSchema, from: number): KeywordNode {
  return node(
    keyword,
    (instance, evaluation) => {
      if (!Array.isArray(instance)) return true;
      const valid = evaluateItems(schema, instance, from, instance.length, evaluation);
      markAllItems(evaluation);
      return valid;
    },
    (instance, assertsFormats) => !Array.isArray(instance) || testItems(schema, instance, from, assertsFormats),
  );
}

const compilePrefixItems: KeywordCompiler = (value, context) => {
  const tuple = schemaArray(value, 'prefixItems', context);
  return node(
    'prefixItems',
    (instance, evaluation) => !Array.isArray(instance) || evaluateTuple(tuple, instance, evaluation),
    (instance, assertsFormats) => !Array.isArray(instance) || testTuple(tuple, instance, assertsFormats),
  );
};

// Only with an array-form `items`: a schema for the items past the tuple.
const compileAdditionalItems: KeywordCompiler = (value, context) => {
  const schema = context.subschema(value, 'additionalItems');
  const items = context.sibling('items');
  if (!Array.isArray(items)) return undefined;
  const from = items.length;
  return itemsFrom('additionalItems', schema, from);
};

const compileMaxItems: KeywordCompiler = (value) => {
  const max = nonNegativeInteger(value, 'maxItems');
  return assertion('maxItems', (instance) => !Array.isArray(instance) || instance.length <= max);
};

const compileMinItems: KeywordCompiler = (value) => {
  const min = nonNegativeInteger(value, 'minItems');
  return assertion('minItems', (instance) => !Array.isArray(instance) || instance.length >= min);
};

// Few primitives (a tool's labels, tags) are compared pairwise: no Set to build for them.
const PAIRWISE_UNIQUE_ITEMS = 8;

function hasDuplicates(items: readonly JsonValue[]): boolean {
  if (items.length <= PAIRWISE_UNIQUE_ITEMS && items.every(isPrimitive)) {
    for (let i = 1; i < items.length; i++) for (let j = 0; j < i; j++) if (items[i] === items[j]) return true;
    return false;
  }
  const primitives = new Set<JsonValue>();
  const structured = new Set<string>();
  for (const item of items) {
    if (isPrimitive(item)) {
      if (primitives.has(item)) return true;
      primitives.add(item);
    } else {
      const key = canonicalKey(item);
      if (structured.has(key)) return true;
      structured.add(key);
    }
  }
  return false;
}

const compileUniqueItems: KeywordCompiler = (value) => {
  if (typeof value !== 'boolean') throw invalid('uniqueItems');
  if (!value) return undefined;
  return assertion('uniqueItems', (instance) => !Array.isArray(instance) || instance.length < 2 || !hasDuplicates(instance));
};

// `contains`, with 2019-09's `minContains`/`maxContains` (which mean nothing without it).
const compileContains: KeywordCompiler = (value, context) => {
  const schema = context.subschema(value, 'contains');
  const counted = context.draft === '2019-09' || context.draft === '2020-12';
  const minValue = counted ? context.sibling('minContains') : undefined;
  const maxValue = counted ? context.sibling('maxContains') : undefined;
  const min = minValue === undefined ? 1 : nonNegativeInteger(minValue, 'minContains');
  const max = maxValue === undefined ? Infinity : nonNegativeInteger(maxValue, 'maxContains');
  // 2020-12: the items `contains` matched count as evaluated for `unevaluatedItems`.
  const annotates = context.draft === '2020-12';
  const evaluate: KeywordNode['evaluate'] = (instance, evaluation) => {
    if (!Array.isArray(instance)) return true;
    const annotating = annotates && evaluation.tracksAnnotations;
    let matches = 0;
    for (let i = 0; i < instance.length; i++) {
      evaluation.enterLocation(i);
      const matched = passes(schema, instance[i] as JsonValue, evaluation);
      evaluation.leaveLocation();
      if (!matched) continue;
      matches++;
      if (annotating) (annotationsOf(evaluation).containedItems ??= new Set()).add(i);
      else if (matches >= min && max === Infinity) return true;
    }
    if (matches < min) {
      if (minValue !== undefined) evaluation.failedAs = 'minContains';
      return false;
    }
    if (matches > max) {
      evaluation.failedAs = 'maxContains';
      return false;
    }
    return true;
  };
  const test: Predicate = (instance, assertsFormats) => {
    if (!Array.isArray(instance)) return true;
    const matches = testOf(schema);
    let count = 0;
    for (let i = 0; i < instance.length; i++) {
      if (!matches(instance[i] as JsonValue, assertsFormats)) continue;
      count++;
      if (count >= min && max === Infinity) return true;
    }
    return count >= min && count <= max;
  };
  return node('contains', evaluate, test);
};

const compileUnevaluatedItems: KeywordCompiler = (value, context) => {
  const schema = context.subschema(value, 'unevaluatedItems');
  context.needsAnnotations();
  return node(
    'unevaluatedItems',
    (instance, evaluation) => {
      if (!Array.isArray(instance)) return true;
      const annotations = evaluation.annotations;
      let valid = true;
      for (let i = 0; i < instance.length; i++) {
        if (isItemEvaluated(annotations, i)) continue;
        if (evaluateAt(schema, instance[i] as JsonValue, i, evaluation)) continue;
        valid = false;
        if (!evaluation.collect) break;
      }
      markAllItems(evaluation);
      return valid;
    },
    undefined,
  );
};

// ——— objects ———

// Evaluates `schema` at property `name` of `object`; in tracking mode, marks it evaluated.
function evaluateProperty(schema: CompiledSchema, object: JsonObject, name: string, evaluation: Evaluation): boolean {
  const valid = evaluateAt(schema, object[name] as JsonValue, name, evaluation);
  if (evaluation.tracksAnnotations) markPropertyEvaluated(evaluation, name);
  return valid;
}

const compileProperties: KeywordCompiler = (value, context) => {
  const entries = schemaMap(value, 'properties', context);
  const names = entries.map(([name]) => name);
  const schemas = entries.map(([, schema]) => schema);
  const evaluate: KeywordNode['evaluate'] = (instance, evaluation) => {
    if (!isJsonObject(instance)) return true;
    let valid = true;
    for (let i = 0; i < names.length; i++) {
      const name = names[i] as string;
      // Own properties only: `toString` or `__proto__` is present only if the instance says so.
      if (!Object.hasOwn(instance, name) || evaluateProperty(schemas[i] as CompiledSchema, instance, name, evaluation)) continue;
      valid = false;
      if (!evaluation.collect) break;
    }
    return valid;
  };
  const test: Predicate = (instance, assertsFormats) => {
    if (!isJsonObject(instance)) return true;
    for (let i = 0; i < names.length; i++) {
      const name = names[i] as string;
      if (Object.hasOwn(instance, name) && !testOf(schemas[i] as CompiledSchema)(instance[name] as JsonValue, assertsFormats)) return false;
    }
    return true;
  };
  return node('properties', evaluate, test);
};

function compilePatternEntries(value: JsonValue): [RegExp, JsonValue][] {
  if (!isJsonObject(value)) throw invalid('patternProperties');
  return Object.keys(value).map((source) => [regex(source, 'patternProperties'), value[source] as JsonValue]);
}

const compilePatternProperties: KeywordCompiler = (value, context) => {
  const entries = compilePatternEntries(value).map(([pattern, schema]) => [pattern, context.subschema(schema, 'patternProperties')] as const);
  const evaluate: KeywordNode['evaluate'] = (instance, evaluation) => {
    if (!isJsonObject(instance)) return true;
    let valid = true;
    for (const name of Object.keys(instance)) {
      for (const [pattern, schema] of entries) {
        if (!pattern.test(name) || evaluateProperty(schema, instance, name, evaluation)) continue;
        valid = false;
        if (!evaluation.collect) return false;
      }
    }
    return valid;
  };
  const test: Predicate = (instance, assertsFormats) => {
    if (!isJsonObject(instance)) return true;
    for (const name of Object.keys(instance)) {
      for (const [pattern, schema] of entries) {
        if (pattern.test(name) && !testOf(schema)(instance[name] as JsonValue, assertsFormats)) return false;
      }
    }
    return true;
  };
  return node('patternProperties', evaluate, test);
};

function matchesAny(patterns: readonly RegExp[], name: string): boolean {
  for (const pattern of patterns) if (pattern.test(name)) return true;
  return false;
}

// The properties neither `properties` nor `patternProperties` (of the same schema object) name.
const compileAdditionalProperties: KeywordCompiler = (value, context) => {
  const schema = context.subschema(value, 'additionalProperties');
  const properties = context.sibling('properties');
  const patternProperties = context.sibling('patternProperties');
  const named = new Set(isJsonObject(properties) ? Object.keys(properties) : []);
  const patterns = patternProperties === undefined ? [] : compilePatternEntries(patternProperties).map(([pattern]) => pattern);
  const evaluate: KeywordNode['evaluate'] = (instance, evaluation) => {
    if (!isJsonObject(instance)) return true;
    let valid = true;
    for (const name of Object.keys(instance)) {
      if (named.has(name) || matchesAny(patterns, name)) continue;
      if (evaluateAt(schema, instance[name] as JsonValue, name, evaluation)) continue;
      valid = false;
      if (!evaluation.collect) break;
    }
    // With `properties` and `patternProperties`, every property is now evaluated.
    if (evaluation.tracksAnnotations) annotationsOf(evaluation).allProperties = true;
    return valid;
  };
  const test: Predicate = (instance, assertsFormats) => {
    if (!isJsonObject(instance)) return true;
    for (const name of Object.keys(instance)) {
      if (named.has(name) || matchesAny(patterns, name)) continue;
      if (!testOf(schema)(instance[name] as JsonValue, assertsFormats)) return false;
    }
    return true;
  };
  return node('additionalProperties', evaluate, test);
};

const compileUnevaluatedProperties: KeywordCompiler = (value, context) => {
  const schema = context.subschema(value, 'unevaluatedProperties');
  context.needsAnnotations();
  return node(
    'unevaluatedProperties',
    (instance, evaluation) => {
      if (!isJsonObject(instance)) return true;
      const annotations = evaluation.annotations;
      let valid = true;
      for (const name of Object.keys(instance)) {
        if (isPropertyEvaluated(annotations, name)) continue;
        if (evaluateAt(schema, instance[name] as JsonValue, name, evaluation)) continue;
        valid = false;
        if (!evaluation.collect) break;
      }
      annotationsOf(evaluation).allProperties = true;
      return valid;
    },
    undefined,
  );
};

const compileRequired: KeywordCompiler = (value) => {
  const names = stringArray(value, 'required');
  if (names.length === 0) return undefined;
  return assertion('required', (instance) => {
    if (!isJsonObject(instance)) return true;
    for (const name of names) if (!Object.hasOwn(instance, name)) return false;
    return true;
  });
};

const compileDependentRequired: KeywordCompiler = (value) => {
  if (!isJsonObject(value)) throw invalid('dependentRequired');
  const entries = Object.keys(value).map((name) => [name, stringArray(value[name] as JsonValue, 'dependentRequired')] as const);
  return assertion('dependentRequired', (instance) => {
    if (!isJsonObject(instance)) return true;
    return entries.every(([name, required]) => !Object.hasOwn(instance, name) || required.every((other) => Object.hasOwn(instance, other)));
  });
};

// Applies each schema of `entries` whose property the instance has, at the instance itself.
function evaluateDependentSchemas(entries: readonly (readonly [string, CompiledSchema])[], instance: JsonObject, evaluation: Evaluation): boolean {
  let valid = true;
  for (const [name, schema] of entries) {
    if (!Object.hasOwn(instance, name) || evaluateInPlace(schema, instance, evaluation)) continue;
    valid = false;
    if (!evaluation.collect) break;
  }
  return valid;
}

function testDependentSchemas(entries: readonly (readonly [string, CompiledSchema])[], instance: JsonObject, assertsFormats: boolean): boolean {
  for (const [name, schema] of entries) if (Object.hasOwn(instance, name) && !testOf(schema)(instance, assertsFormats)) return false;
  return true;
}

const compileDependentSchemas: KeywordCompiler = (value, context) => {
  const entries = schemaMap(value, 'dependentSchemas', context);
  return node(
    'dependentSchemas',
    (instance, evaluation) => !isJsonObject(instance) || evaluateDependentSchemas(entries, instance, evaluation),
    (instance, assertsFormats) => !isJsonObject(instance) || testDependentSchemas(entries, instance, assertsFormats),
  );
};

// Drafts 4–7: each dependency is either property names (as dependentRequired) or a schema (as dependentSchemas).
const compileDependencies: KeywordCompiler = (value, context) => {
  if (!isJsonObject(value)) throw invalid('dependencies');
  const required: [string, string[]][] = [];
  const schemas: [string, CompiledSchema][] = [];
  for (const name of Object.keys(value)) {
    const dependency = value[name] as JsonValue;
    if (Array.isArray(dependency)) required.push([name, stringArray(dependency, 'dependencies')]);
    else schemas.push([name, context.subschema(dependency, 'dependencies')]);
  }
  const presentIn = (instance: JsonObject): boolean =>
    required.every(([name, others]) => !Object.hasOwn(instance, name) || others.every((other) => Object.hasOwn(instance, other)));
  return node(
    'dependencies',
    (instance, evaluation) => {
      if (!isJsonObject(instance)) return true;
      const present = presentIn(instance);
      if (!present && !evaluation.collect) return false;
      return evaluateDependentSchemas(schemas, instance, evaluation) && present;
    },
    (instance, assertsFormats) => !isJsonObject(instance) || (presentIn(instance) && testDependentSchemas(schemas, instance, assertsFormats)),
  );
};

const compilePropertyNames: KeywordCompiler = (value, context) => {
  const schema = context.subschema(value, 'propertyNames');
  // Each name is evaluated as a string instance, reported at the property's location.
  const evaluate: KeywordNode['evaluate'] = (instance, evaluation) => {
    if (!isJsonObject(instance)) return true;
    let valid = true;
    for (const name of Object.keys(instance)) {
      if (evaluateAt(schema, name, name, evaluation)) continue;
      valid = false;
      if (!evaluation.collect) break;
    }
    return valid;
  };
  const test: Predicate = (instance, assertsFormats) => {
    if (!isJsonObject(instance)) return true;
    const named = testOf(schema);
    for (const name of Object.keys(instance)) if (!named(name, assertsFormats)) return false;
    return true;
  };
  return node('propertyNames', evaluate, test);
};

const compileMaxProperties: KeywordCompiler = (value) => {
  const max = nonNegativeInteger(value, 'maxProperties');
  return assertion('maxProperties', (instance) => !isJsonObject(instance) || Object.keys(instance).length <= max);
};

const compileMinProperties: KeywordCompiler = (value) => {
  const min = nonNegativeInteger(value, 'minProperties');
  return assertion('minProperties', (instance) => !isJsonObject(instance) || Object.keys(instance).length >= min);
};

// ——— applicators ———

// How many of `schemas` pass by their predicates, counting up to `enough`; 0 when some branch
// must be interpreted (then the caller interprets them all, as without predicates).
function settledCount(schemas: readonly CompiledSchema[], instance: JsonValue, evaluation: Evaluation, enough: number): number {
  let passed = 0;
  for (const schema of schemas) {
    const verdict = settledVerdict(schema, instance, evaluation);
    if (verdict === undefined) return 0;
    if (verdict && ++passed >= enough) break;
  }
  return passed;
}

const compileAllOf: KeywordCompiler = (value, context) => {
  const schemas = schemaArray(value, 'allOf', context);
  const evaluate: KeywordNode['evaluate'] = (instance, evaluation) => {
    let valid = true;
    for (const schema of schemas) {
      if (evaluateInPlace(schema, instance, evaluation)) continue;
      valid = false;
      if (!evaluation.collect) break;
    }
    return valid;
  };
  const test: Predicate = (instance, assertsFormats) => {
    for (const schema of schemas) if (!testOf(schema)(instance, assertsFormats)) return false;
    return true;
  };
  return node('allOf', evaluate, test);
};

// Reports the failures of every branch only when none passes. With `unevaluated*` about, every
// branch is evaluated: each passing one contributes its annotations.
const compileAnyOf: KeywordCompiler = (value, context) => {
  const schemas = schemaArray(value, 'anyOf', context);
  const evaluate: KeywordNode['evaluate'] = (instance, evaluation) => {
    // A branch that passes makes every branch's failures moot: find one by predicate first.
    if (settledCount(schemas, instance, evaluation, 1) > 0) return true;
    const mark = evaluation.failures.length;
    let valid = false;
    for (const schema of schemas) {
      if (!valid) valid = evaluateInPlace(schema, instance, evaluation);
      else if (evaluation.tracksAnnotations) {
        const collect = evaluation.collect;
        evaluation.collect = false;
        evaluateInPlace(schema, instance, evaluation);
        evaluation.collect = collect;
      } else break;
    }
    if (valid) evaluation.failures.length = mark;
    return valid;
  };
  const test: Predicate = (instance, assertsFormats) => {
    for (const schema of schemas) if (testOf(schema)(instance, assertsFormats)) return true;
    return false;
  };
  return node('anyOf', evaluate, test);
};

const compileOneOf: KeywordCompiler = (value, context) => {
  const schemas = schemaArray(value, 'oneOf', context);
  const evaluate: KeywordNode['evaluate'] = (instance, evaluation) => {
    // Once a branch passes, no branch's failures are reported: count the passing ones by predicate.
    const settled = settledCount(schemas, instance, evaluation, 2);
    if (settled > 0) return settled === 1;
    const mark = evaluation.failures.length;
    const outer = evaluation.annotations;
    let passed = 0;
    let passedAnnotations: Annotations | undefined;
    for (const schema of schemas) {
      evaluation.annotations = undefined;
      if (evaluateSchema(schema, instance, evaluation)) {
        passed++;
        passedAnnotations = evaluation.annotations;
        if (passed > 1) break;
      }
    }
    evaluation.annotations = outer;
    // Branch failures explain a oneOf only when no branch passed.
    if (passed > 0) evaluation.failures.length = mark;
    if (passed !== 1) return false;
    if (evaluation.tracksAnnotations && passedAnnotations !== undefined) {
      mergeAnnotations(annotationsOf(evaluation), passedAnnotations);
    }
    return true;
  };
  const test: Predicate = (instance, assertsFormats) => {
    let passed = 0;
    for (const schema of schemas) if (testOf(schema)(instance, assertsFormats) && ++passed > 1) return false;
    return passed === 1;
  };
  return node('oneOf', evaluate, test);
};

const compileNot: KeywordCompiler = (value, context) => {
  const schema = context.subschema(value, 'not');
  return node(
    'not',
    (instance, evaluation) => !passes(schema, instance, evaluation),
    (instance, assertsFormats) => !testOf(schema)(instance, assertsFormats),
  );
};

// `if` decides between `then` and `else`; a failure is reported under the branch's name.
const compileIf: KeywordCompiler = (value, context) => {
  const condition = context.subschema(value, 'if');
  const thenValue = context.sibling('then');
  const elseValue = context.sibling('else');
  if (thenValue === undefined && elseValue === undefined) {
    // Alone, `if` asserts nothing, but when it holds its annotations count for `unevaluated*`.
    return node(
      'if',
      (instance, evaluation) => {
        if (evaluation.tracksAnnotations) {
          const collect = evaluation.collect;
          evaluation.collect = false;
          evaluateInPlace(condition, instance, evaluation);
          evaluation.collect = collect;
        }
        return true;
      },
      () => true,
    );
  }
  const thenSchema = thenValue === undefined ? undefined : context.subschema(thenValue, 'then');
  const elseSchema = elseValue === undefined ? undefined : context.subschema(elseValue, 'else');
  const evaluate: KeywordNode['evaluate'] = (instance, evaluation) => {
    const collect = evaluation.collect;
    evaluation.collect = false;
    const holds = settledVerdict(condition, instance, evaluation) ?? evaluateInPlace(condition, instance, evaluation);
    evaluation.collect = collect;
    const branch = holds ? thenSchema : elseSchema;
    if (branch === undefined || evaluateInPlace(branch, instance, evaluation)) return true;
    evaluation.failedAs = holds ? 'then' : 'else';
    return false;
  };
  const test: Predicate = (instance, assertsFormats) => {
    const branch = testOf(condition)(instance, assertsFormats) ? thenSchema : elseSchema;
    return branch === undefined || testOf(branch)(instance, assertsFormats);
  };
  return node('if', evaluate, test);
};

// ——— references ———

// A reference whose target is known when compiling: its predicate is the target's.
function staticReference(keyword: string, target: CompiledSchema): KeywordNode {
  return node(
    keyword,
    (instance, evaluation) => followReference(target, keyword, instance, evaluation),
    (instance, assertsFormats) => testOf(target)(instance, assertsFormats),
  );
}

const compileRef: KeywordCompiler = (value, context) => {
  if (typeof value !== 'string') throw invalid('$ref');
  const { schema } = context.reference(value);
  return staticReference('$ref', schema);
};

// 2020-12: resolves like `$ref`; when that lands on a `$dynamicAnchor` of the same name, the
// outermost resource in the dynamic scope with that `$dynamicAnchor` is used instead.
const compileDynamicRef: KeywordCompiler = (value, context) => {
  if (typeof value !== 'string') throw invalid('$dynamicRef');
  const { schema, resolved } = context.reference(value);
  const anchor = resolved.anchor;
  const dynamic = anchor !== undefined && resolved.namedResource.dynamicAnchors.get(anchor) === resolved.node;
  if (!dynamic) return staticReference('$dynamicRef', schema);
  return node(
    '$dynamicRef',
    (instance, evaluation) => {
      let target = schema;
      for (const resource of evaluation.scope) {
        const found = resource.dynamicAnchors.get(anchor);
        if (found !== undefined) {
          target = found;
          break;
        }
      }
      return followReference(target, '$dynamicRef', instance, evaluation);
    },
    undefined,
  );
};

// 2019-09: resolves like `$ref`; when that lands on a resource root with `$recursiveAnchor:
// true`, the outermost resource in the dynamic scope whose root has it too is used instead.
const compileRecursiveRef: KeywordCompiler = (value, context) => {
  if (typeof value !== 'string') throw invalid('$recursiveRef');
  const { schema, resolved } = context.reference(value);
  const dynamic = resolved.resource.recursiveAnchor && resolved.node === resolved.resource.root;
  if (!dynamic) return staticReference('$recursiveRef', schema);
  return node(
    '$recursiveRef',
    (instance, evaluation) => {
      let target = schema;
      for (const resource of evaluation.scope) {
        if (resource.recursiveRoot !== undefined) {
          target = resource.recursiveRoot;
          break;
        }
      }
      return followReference(target, '$recursiveRef', instance, evaluation);
    },
    undefined,
  );
};

/** Every keyword that asserts or applies subschemas; the dialect decides which are on. */
export const KEYWORDS: ReadonlyMap<string, KeywordCompiler> = new Map<string, KeywordCompiler>([
  ['$ref', compileRef],
  ['$dynamicRef', compileDynamicRef],
  ['$recursiveRef', compileRecursiveRef],
  ['type', compileType],
  ['enum', compileEnum],
  ['const', compileConst],
  ['multipleOf', compileMultipleOf],
  ['maximum', compileBound('maximum')],
  ['minimum', compileBound('minimum')],
  ['exclusiveMaximum', compileExclusiveBound('exclusiveMaximum')],
  ['exclusiveMinimum', compileExclusiveBound('exclusiveMinimum')],
  ['maxLength', compileMaxLength],
  ['minLength', compileMinLength],
  ['pattern', compilePattern],
  ['format', compileFormat],
  ['items', compileItems],
  ['prefixItems', compilePrefixItems],
  ['additionalItems', compileAdditionalItems],
  ['maxItems', compileMaxItems],
  ['minItems', compileMinItems],
  ['uniqueItems', compileUniqueItems],
  ['contains', compileContains],
  ['unevaluatedItems', compileUnevaluatedItems],
  ['properties', compileProperties],
  ['patternProperties', compilePatternProperties],
  ['additionalProperties', compileAdditionalProperties],
  ['unevaluatedProperties', compileUnevaluatedProperties],
  ['required', compileRequired],
  ['dependentRequired', compileDependentRequired],
  ['dependentSchemas', compileDependentSchemas],
  ['dependencies', compileDependencies],
  ['propertyNames', compilePropertyNames],
  ['maxProperties', compileMaxProperties],
  ['minProperties', compileMinProperties],
  ['allOf', compileAllOf],
  ['anyOf', compileAnyOf],
  ['oneOf', compileOneOf],
  ['not', compileNot],
  ['if', compileIf],
]);

/** Keywords that read the annotations of their siblings, so they run after all of them. */
export const RUNS_LAST: ReadonlySet<string> = new Set(['unevaluatedProperties', 'unevaluatedItems']);
