// The fast path must change nothing but speed: on randomized instances, `validateInstance`
// (predicates settling what passes) answers exactly what `interpretInstance` (the interpreter
// alone) answers, failures and their order included, for the guard bench's schemas, some
// schemas of our own that sit on the fast path's edges, and every schema of the official suite
// copy. And nothing is generated: validation runs with `Function` and `eval` made to throw.
import { describe, expect, it } from '@jest/globals';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { type JsonValue, isJsonObject } from '@gatehouse/contracts';
import { type Random, seeded } from '@gatehouse/contracts/testing';
import { type Draft, type JsonSchemaValidator, type RemoteSchemas, indexRemotes, prepareJsonSchema, validateInstance } from './index.js';
import { interpretInstance } from './validate.js';
import { CREATE_TICKET_SCHEMA, DEPLOY_PLAN_SCHEMA } from './testing/index.js';
import { SUITE_DIR, SUITE_DRAFTS, suiteRemotes } from './official-suite.testing.js';

const MUTANTS_PER_INSTANCE = 12;

const TICKET: JsonValue = {
  project: 'OPS1',
  title: 'Disk usage',
  body: 'text',
  priority: 'high',
  labels: ['infra', 'disk'],
  assignee: { id: 3, team: 'sre' },
  dueInDays: 4,
};

const PLAN: JsonValue = {
  service: 'payments',
  steps: [
    { name: 'ship', action: { kind: 'deploy', image: 'api:1', replicas: 2, resources: { cpu: 1.25, memoryMb: 128 } }, env: { REGION: 'eu' } },
    { name: 'settle', action: { kind: 'wait', seconds: 30.5 } },
    { name: 'tell', action: { kind: 'notify', channel: '#deploys' } },
  ],
  rollback: true,
};

// A tree through `$ref: '#'` (a cycle: interpreter only) with a linked leaf, and a schema
// whose annotations an `unevaluatedProperties` reads (interpreter only at the root, linked below).
const TREE: JsonValue = {
  type: 'object',
  properties: { value: { $ref: '#/$defs/leaf' }, children: { type: 'array', items: { $ref: '#' } } },
  $defs: { leaf: { type: 'object', properties: { n: { type: 'integer', multipleOf: 3 }, tag: { enum: ['a', 'b'] } }, required: ['n'] } },
};
const TREE_VALUE: JsonValue = { value: { n: 3, tag: 'a' }, children: [{ value: { n: 6 }, children: [] }, { value: { n: 9, tag: 'b' } }] };
const UNEVALUATED: JsonValue = {
  allOf: [{ properties: { a: { type: 'string' } } }],
  anyOf: [{ properties: { b: { type: 'integer' } }, required: ['b'] }, { properties: { c: { const: true } } }],
  unevaluatedProperties: false,
};

const OUR_SCHEMAS: readonly { readonly name: string; readonly schema: JsonValue; readonly instances: readonly JsonValue[]; readonly linked: boolean }[] = [
  { name: 'create_ticket', schema: CREATE_TICKET_SCHEMA, instances: [TICKET], linked: true },
  { name: 'deploy_plan', schema: DEPLOY_PLAN_SCHEMA, instances: [PLAN], linked: true },
  { name: 'a recursive tree', schema: TREE, instances: [TREE_VALUE], linked: false },
  { name: 'unevaluatedProperties over allOf/anyOf', schema: UNEVALUATED, instances: [{ a: 'x', b: 1 }, { a: 'x', c: true, d: 1 }], linked: false },
];

const STRINGS = ['', 'a', 'A1', 'OPS1', 'foo', '#chan', 'x@y.org', 'Step 1', '2020-01-01', '\u{1F600}', 'deploy', 'wait'];
const NUMBERS = [0, -1, 1, 2, 3, 1.5, 0.25, 0.3, 64, 100, 400.5, 1e308, -0.5, 3600.5];
const KEYS = ['a', 'b', 'c', 'd', 'foo', 'kind', 'name', 'n', 'admin', 'LOG_LEVEL', 'log_level'];

function pick<T>(random: Random, items: readonly T[]): T {
  return items[Math.floor(random() * items.length)] as T;
}

function randomValue(random: Random, depth = 0): JsonValue {
  const roll = random();
  if (roll < 0.3) return pick(random, STRINGS);
  if (roll < 0.6) return pick(random, NUMBERS);
  if (roll < 0.7) return pick(random, [true, false, null]);
  if (depth > 2 || roll < 0.85) return roll < 0.78 ? [] : {};
  if (roll < 0.93) return Array.from({ length: Math.floor(random() * 4) }, () => randomValue(random, depth + 1));
  return Object.fromEntries(Array.from({ length: Math.floor(random() * 4) }, () => [pick(random, KEYS), randomValue(random, depth + 1)]));
}

// One random change somewhere in `value` (a copy; the original is kept).
function mutate(value: JsonValue, random: Random): JsonValue {
  const roll = random();
  if (Array.isArray(value) && value.length > 0 && roll < 0.8) {
    const copy = [...value];
    const index = Math.floor(random() * copy.length);
    if (roll < 0.5) copy[index] = mutate(copy[index] as JsonValue, random);
    else if (roll < 0.6) copy.splice(index, 1);
    else if (roll < 0.7) copy.push(copy[index] as JsonValue);
    else copy.push(randomValue(random));
    return copy;
  }
  if (isJsonObject(value) && Object.keys(value).length > 0 && roll < 0.8) {
    const copy = { ...value };
    const key = pick(random, Object.keys(copy));
    if (roll < 0.5) copy[key] = mutate(copy[key] as JsonValue, random);
    else if (roll < 0.65) delete copy[key];
    else copy[pick(random, KEYS)] = randomValue(random);
    return copy;
  }
  return randomValue(random);
}

// Each instance, and mutants of it: mostly near-valid arguments, broken in a place or two.
function instancesFrom(seeds: readonly JsonValue[], random: Random): JsonValue[] {
  const instances: JsonValue[] = [...seeds];
  for (const seed of seeds) {
    let mutant = seed;
    for (let i = 0; i < MUTANTS_PER_INSTANCE; i++) {
      mutant = random() < 0.5 ? mutate(seed, random) : mutate(mutant, random);
      instances.push(mutant);
    }
  }
  return instances;
}

// The instances (described) on which the two paths answer differently, with either format mode.
function disagreements(validator: JsonSchemaValidator, instances: readonly JsonValue[]): string[] {
  const found: string[] = [];
  for (const instance of instances) {
    for (const assertFormats of [true, false]) {
      const fast = JSON.stringify(validateInstance(validator, instance, { assertFormats }));
      const reference = JSON.stringify(interpretInstance(validator, instance, { assertFormats }));
      if (fast !== reference) found.push(`${JSON.stringify(instance)} (formats ${assertFormats}): ${fast} vs ${reference}`);
    }
  }
  return found;
}

function prepared(schema: JsonValue, draft: Draft, remotes?: RemoteSchemas): JsonSchemaValidator {
  const preparation = prepareJsonSchema(schema, { draft, ...(remotes === undefined ? {} : { remotes }) });
  if (!preparation.ok) throw new Error(`schema not usable: ${preparation.problem.message}`);
  return preparation.validator;
}

describe('the fast path agrees with the interpreter', () => {
  for (const { name, schema, instances, linked } of OUR_SCHEMAS) {
    it(`on randomized instances of ${name}`, () => {
      const validator = prepared(schema, '2020-12');
      expect(validator.fastPath !== undefined).toBe(linked);
      const random = seeded(name.length * 7919);
      const many = Array.from({ length: 20 }, () => instancesFrom(instances, random)).flat();
      expect(disagreements(validator, many)).toEqual([]);
    });
  }

  // Each level of the tree nests three schemas deep and its leaf three more: around 330 levels
  // the recursion alone stays under the limit while the leaf crosses it.
  it('keeps the depth limit where a linked subschema sits under deep recursion', () => {
    const validator = prepared(TREE, '2020-12');
    const nested = (levels: number): JsonValue => {
      let deep: JsonValue = { value: { n: 3 } };
      for (let i = 0; i < levels; i++) deep = { value: { n: 3 }, children: [deep] };
      return deep;
    };
    expect(validateInstance(validator, nested(1_200))).toEqual({ outcome: 'too-deep' });
    const edge = Array.from({ length: 16 }, (_, i) => nested(325 + i));
    expect(new Set(edge.map((instance) => validateInstance(validator, instance).outcome))).toEqual(new Set(['valid', 'too-deep']));
    expect(disagreements(validator, edge)).toEqual([]);
  });

  const remoteSchemas = suiteRemotes();
  for (const draftDir of Object.keys(SUITE_DRAFTS).filter((dir) => existsSync(path.join(SUITE_DIR, 'tests', dir)))) {
    const draft = SUITE_DRAFTS[draftDir] as Draft;
    const indexed = indexRemotes(remoteSchemas, draft);
    const files = readdirSync(path.join(SUITE_DIR, 'tests', draftDir)).filter((file) => file.endsWith('.json'));
    for (const file of files) {
      it(`on randomized instances of the official suite's ${draftDir}/${file}`, () => {
        if (!indexed.ok) throw new Error('suite remotes not usable');
        const cases = JSON.parse(readFileSync(path.join(SUITE_DIR, 'tests', draftDir, file), 'utf8')) as { schema: JsonValue; tests: { data: JsonValue }[] }[];
        const random = seeded(file.length * 104_729 + draft.length);
        const found = cases.flatMap((suiteCase) =>
          disagreements(
            prepared(suiteCase.schema, draft, indexed.remotes),
            instancesFrom(
              suiteCase.tests.map((test) => test.data),
              random,
            ),
          ),
        );
        expect(found).toEqual([]);
      });
    }
  }
});

describe('no code is generated', () => {
  it('prepares and validates with Function and eval made to throw', () => {
    const globals = globalThis as { Function: FunctionConstructor; eval: typeof eval };
    const [realFunction, realEval] = [globals.Function, globals.eval];
    const refuse = (): never => {
      throw new Error('code generation attempted');
    };
    globals.Function = refuse as unknown as FunctionConstructor;
    globals.eval = refuse;
    try {
      const outcomes = OUR_SCHEMAS.map(({ schema, instances }) => {
        const validator = prepared(schema, '2020-12');
        return instancesFrom(instances, seeded(1)).map((instance) => validateInstance(validator, instance).outcome);
      });
      expect(outcomes.flat()).toContain('invalid');
    } finally {
      globals.Function = realFunction;
      globals.eval = realEval;
    }
  });

  it('has no `new Function`, `Function(` or `eval(` in its source', () => {
    const sources = readdirSync(import.meta.dirname, { recursive: true, withFileTypes: true }).filter(
      (entry) => entry.isFile() && entry.name.endsWith('.ts') && !entry.name.endsWith('.spec.ts'),
    );
    expect(sources.length).toBeGreaterThan(10);
    // Code only: comments may say what the library does not do.
    const code = (file: string): string =>
      readFileSync(file, 'utf8')
        .replace(/\/\*[\s\S]*?\*\//gu, '')
        .replace(/\/\/.*$/gmu, '');
    const offending = sources.filter((entry) => /\bnew\s+Function\b|\bFunction\s*\(|\beval\s*\(/u.test(code(path.join(entry.parentPath, entry.name))));
    expect(offending.map((entry) => entry.name)).toEqual([]);
  });
});
