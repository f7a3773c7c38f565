// The four drafts as data: which keywords each one has, which of them hold subschemas (the only
// places an `$id` or anchor is an identifier), and the vocabularies 2019-09 and 2020-12 group
// their keywords into, so a custom meta-schema's `$vocabulary` can switch groups on and off.

/** The JSON Schema drafts the validator implements. */
export type Draft = '4' | '7' | '2019-09' | '2020-12';

/** How a schema's keywords are read: its draft, and which of that draft's keywords are on. */
export interface Dialect {
  readonly draft: Draft;
  /** Keywords that take effect; anything else in a schema object is ignored. */
  readonly keywords: ReadonlySet<string>;
  /** The meta-schema a schema of this dialect must conform to (absolute, no fragment). */
  readonly metaSchemaUri: string;
}

/** Each draft's meta-schema URI, as the published meta-schema's own `id`/`$id` names it. */
export const META_SCHEMA_URI: Readonly<Record<Draft, string>> = {
  '4': 'http://json-schema.org/draft-04/schema',
  '7': 'http://json-schema.org/draft-07/schema',
  '2019-09': 'https://json-schema.org/draft/2019-09/schema',
  '2020-12': 'https://json-schema.org/draft/2020-12/schema',
};

// `$schema` values, compared without scheme and trailing `#`: `https://json-schema.org/draft-07/schema#`
// is seen in the wild and means draft 7 too.
const DRAFT_BY_META_SCHEMA: ReadonlyMap<string, Draft> = new Map<string, Draft>([
  ['json-schema.org/draft-04/schema', '4'],
  ['json-schema.org/draft-07/schema', '7'],
  ['json-schema.org/draft/2019-09/schema', '2019-09'],
  ['json-schema.org/draft/2020-12/schema', '2020-12'],
]);

/** The draft a `$schema` value names, or undefined when it names none of the four. */
export function draftOfMetaSchema(uri: string): Draft | undefined {
  return DRAFT_BY_META_SCHEMA.get(uri.replace(/^https?:\/\//u, '').replace(/#$/u, ''));
}

const DRAFT_4_KEYWORDS = [
  'id', '$schema', '$ref', 'definitions', 'type', 'enum', 'multipleOf', 'maximum', 'exclusiveMaximum', 'minimum', 'exclusiveMinimum',
  'maxLength', 'minLength', 'pattern', 'items', 'additionalItems', 'maxItems', 'minItems', 'uniqueItems', 'maxProperties', 'minProperties',
  'required', 'properties', 'patternProperties', 'additionalProperties', 'dependencies', 'allOf', 'anyOf', 'oneOf', 'not', 'format',
];
const DRAFT_7_KEYWORDS = [
  ...DRAFT_4_KEYWORDS.filter((keyword) => keyword !== 'id'),
  '$id', 'const', 'contains', 'propertyNames', 'if', 'then', 'else',
];

// 2019-09 and 2020-12 vocabularies (each draft's part 1 §8 and part 2 §6–§9).
const VOCABULARIES_2019_09: Readonly<Record<string, readonly string[]>> = {
  'https://json-schema.org/draft/2019-09/vocab/core': ['$id', '$schema', '$anchor', '$ref', '$recursiveRef', '$recursiveAnchor', '$vocabulary', '$comment', '$defs'],
  'https://json-schema.org/draft/2019-09/vocab/applicator': [
    'additionalItems', 'unevaluatedItems', 'items', 'contains', 'additionalProperties', 'unevaluatedProperties', 'properties',
    'patternProperties', 'dependentSchemas', 'propertyNames', 'if', 'then', 'else', 'allOf', 'anyOf', 'oneOf', 'not',
  ],
  'https://json-schema.org/draft/2019-09/vocab/validation': [
    'multipleOf', 'maximum', 'exclusiveMaximum', 'minimum', 'exclusiveMinimum', 'maxLength', 'minLength', 'pattern', 'maxItems', 'minItems',
    'uniqueItems', 'maxContains', 'minContains', 'maxProperties', 'minProperties', 'required', 'dependentRequired', 'const', 'enum', 'type',
  ],
  'https://json-schema.org/draft/2019-09/vocab/meta-data': ['title', 'description', 'default', 'deprecated', 'readOnly', 'writeOnly', 'examples'],
  'https://json-schema.org/draft/2019-09/vocab/format': ['format'],
  'https://json-schema.org/draft/2019-09/vocab/content': ['contentEncoding', 'contentMediaType', 'contentSchema'],
};
const VOCABULARIES_2020_12: Readonly<Record<string, readonly string[]>> = {
  'https://json-schema.org/draft/2020-12/vocab/core': ['$id', '$schema', '$ref', '$anchor', '$dynamicRef', '$dynamicAnchor', '$vocabulary', '$comment', '$defs'],
  'https://json-schema.org/draft/2020-12/vocab/applicator': [
    'prefixItems', 'items', 'contains', 'additionalProperties', 'properties', 'patternProperties', 'dependentSchemas', 'propertyNames',
    'if', 'then', 'else', 'allOf', 'anyOf', 'oneOf', 'not',
  ],
  'https://json-schema.org/draft/2020-12/vocab/unevaluated': ['unevaluatedItems', 'unevaluatedProperties'],
  'https://json-schema.org/draft/2020-12/vocab/validation': [
    'type', 'const', 'enum', 'multipleOf', 'maximum', 'exclusiveMaximum', 'minimum', 'exclusiveMinimum', 'maxLength', 'minLength',
    'pattern', 'maxItems', 'minItems', 'uniqueItems', 'maxContains', 'minContains', 'maxProperties', 'minProperties', 'required', 'dependentRequired',
  ],
  'https://json-schema.org/draft/2020-12/vocab/meta-data': ['title', 'description', 'default', 'deprecated', 'readOnly', 'writeOnly', 'examples'],
  'https://json-schema.org/draft/2020-12/vocab/format-annotation': ['format'],
  'https://json-schema.org/draft/2020-12/vocab/format-assertion': ['format'],
  'https://json-schema.org/draft/2020-12/vocab/content': ['contentEncoding', 'contentMediaType', 'contentSchema'],
};

const VOCABULARIES: Readonly<Partial<Record<Draft, Readonly<Record<string, readonly string[]>>>>> = {
  '2019-09': VOCABULARIES_2019_09,
  '2020-12': VOCABULARIES_2020_12,
};

function allKeywords(draft: Draft): ReadonlySet<string> {
  switch (draft) {
    case '4':
      return new Set(DRAFT_4_KEYWORDS);
    case '7':
      return new Set(DRAFT_7_KEYWORDS);
    case '2019-09':
      return new Set(Object.values(VOCABULARIES_2019_09).flat());
    case '2020-12':
      return new Set(Object.values(VOCABULARIES_2020_12).flat());
    default: {
      const exhaustive: never = draft;
      return exhaustive;
    }
  }
}

/** Each draft with every keyword on: what a schema gets from `$schema` or the configured draft. */
export const STANDARD_DIALECTS: Readonly<Record<Draft, Dialect>> = {
  '4': { draft: '4', keywords: allKeywords('4'), metaSchemaUri: META_SCHEMA_URI['4'] },
  '7': { draft: '7', keywords: allKeywords('7'), metaSchemaUri: META_SCHEMA_URI['7'] },
  '2019-09': { draft: '2019-09', keywords: allKeywords('2019-09'), metaSchemaUri: META_SCHEMA_URI['2019-09'] },
  '2020-12': { draft: '2020-12', keywords: allKeywords('2020-12'), metaSchemaUri: META_SCHEMA_URI['2020-12'] },
};

/**
 * The dialect a custom meta-schema defines with `$vocabulary`: the keywords of the vocabularies
 * it lists (core always). An unknown vocabulary it requires (`true`) makes it unusable
 * (returns its URI); one it lists as optional (`false`) is ignored, as the specification says.
 */
export function dialectOfVocabularies(
  draft: Draft,
  vocabularies: Readonly<Record<string, boolean>>,
  metaSchemaUri: string,
): Dialect | { readonly unknownRequiredVocabulary: string } {
  const known = VOCABULARIES[draft];
  if (known === undefined) return { ...STANDARD_DIALECTS[draft], metaSchemaUri };
  const keywords = new Set<string>();
  for (const [uri, words] of Object.entries(known)) if (uri.endsWith('/vocab/core')) for (const word of words) keywords.add(word);
  for (const [uri, required] of Object.entries(vocabularies)) {
    const words = Object.hasOwn(known, uri) ? known[uri] : undefined;
    if (words === undefined) {
      if (required) return { unknownRequiredVocabulary: uri };
      continue;
    }
    for (const word of words) keywords.add(word);
  }
  return { draft, keywords, metaSchemaUri };
}

/** Where subschemas stand in a schema object of a draft: the only places identifiers count. */
export interface SubschemaKeywords {
  /** Keywords whose value is one schema. */
  readonly single: readonly string[];
  /** Keywords whose value is an array of schemas. */
  readonly arrays: readonly string[];
  /** Keywords whose value maps names to schemas (non-schema values, such as `dependencies` arrays, are skipped). */
  readonly maps: readonly string[];
}

const SUBSCHEMA_KEYWORDS: Readonly<Record<Draft, SubschemaKeywords>> = {
  '4': {
    single: ['additionalItems', 'additionalProperties', 'not', 'items'],
    arrays: ['allOf', 'anyOf', 'oneOf', 'items'],
    maps: ['properties', 'patternProperties', 'definitions', 'dependencies'],
  },
  '7': {
    single: ['additionalItems', 'additionalProperties', 'not', 'items', 'contains', 'propertyNames', 'if', 'then', 'else'],
    arrays: ['allOf', 'anyOf', 'oneOf', 'items'],
    maps: ['properties', 'patternProperties', 'definitions', 'dependencies'],
  },
  // `definitions` is no keyword after draft 7, but the meta-schemas still describe its values as
  // schemas (to keep it from being redefined), so identifiers in it are read as identifiers.
  '2019-09': {
    single: ['additionalItems', 'additionalProperties', 'not', 'items', 'contains', 'propertyNames', 'if', 'then', 'else', 'unevaluatedItems', 'unevaluatedProperties', 'contentSchema'],
    arrays: ['allOf', 'anyOf', 'oneOf', 'items'],
    maps: ['properties', 'patternProperties', '$defs', 'definitions', 'dependentSchemas'],
  },
  '2020-12': {
    single: ['additionalProperties', 'not', 'items', 'contains', 'propertyNames', 'if', 'then', 'else', 'unevaluatedItems', 'unevaluatedProperties', 'contentSchema'],
    arrays: ['allOf', 'anyOf', 'oneOf', 'prefixItems'],
    maps: ['properties', 'patternProperties', '$defs', 'definitions', 'dependentSchemas'],
  },
};

export function subschemaKeywords(draft: Draft): SubschemaKeywords {
  return SUBSCHEMA_KEYWORDS[draft];
}

/** Drafts 4 to 7: `$ref` replaces its schema object, its siblings (`$id` included) are ignored. */
export function refReplacesSiblings(draft: Draft): boolean {
  return draft === '4' || draft === '7';
}

/** The keyword that sets a schema's base URI. */
export function idKeyword(draft: Draft): 'id' | '$id' {
  return draft === '4' ? 'id' : '$id';
}
