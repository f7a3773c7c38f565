import { describe, expect, it } from '@jest/globals';
import { type JsonValue } from '@gatehouse/contracts';
import { createSchemaGuardrail, validateAgainstSchema } from './schema-guardrail.js';
import type { GuardrailInput, GuardrailVerdict } from './types.js';

const searchSchema: Record<string, JsonValue> = {
  type: 'object',
  properties: {
    query: { type: 'string', minLength: 1 },
    limit: { type: 'integer', minimum: 1, maximum: 100 },
    filters: { type: 'array', items: { type: 'string' } },
  },
  required: ['query'],
  additionalProperties: false,
};

function toolArgs(value: JsonValue, inputSchema?: Record<string, JsonValue>): GuardrailInput {
  return {
    placement: 'tool-args',
    value,
    tool: { id: 'search', ...(inputSchema === undefined ? {} : { inputSchema }) },
    context: {},
    signal: new AbortController().signal,
  };
}

async function check(value: JsonValue, inputSchema?: Record<string, JsonValue>, draft?: '4' | '7' | '2019-09' | '2020-12'): Promise<GuardrailVerdict> {
  return createSchemaGuardrail(draft === undefined ? {} : { draft }).check(toolArgs(value, inputSchema));
}

/** `keyword at "pointer"` of each failure, from the local API (the verdict names keywords only). */
async function failures(value: JsonValue, schema: JsonValue, options: Parameters<typeof validateAgainstSchema>[2] = {}): Promise<string[]> {
  const validation = await validateAgainstSchema(schema, value, options);
  return !validation.ok && validation.code === 'SCHEMA.INVALID_ARGUMENTS' ? validation.failures.map((f) => `${f.keyword} at ${JSON.stringify(f.pointer)}`) : [];
}

describe('createSchemaGuardrail', () => {
  it('allows arguments that match the tool schema', async () => {
    expect(await check({ query: 'gatehouse', limit: 10 }, searchSchema)).toEqual({ action: 'allow', outcome: 'complete', detections: [] });
  });

  it('denies naming every failing keyword, with the catalogue reason and no pointer or value', async () => {
    const args = { limit: 500, filters: ['ok', 7], secret: 'hunter2' };
    const verdict = await check(args, searchSchema);
    expect(verdict.action).toBe('deny');
    expect(verdict.outcome).toBe('complete');
    expect(verdict.reason).toBe('schema.invalid');
    // Pointers are built from the arguments' keys: they stay with the local API.
    expect(JSON.stringify(verdict)).not.toMatch(/limit|filters|secret|500|hunter2/);
    expect(await failures(args, searchSchema)).toEqual(expect.arrayContaining(['required at ""', 'maximum at "/limit"', 'type at "/filters/1"', 'additionalProperties at ""']));
    expect(verdict.detections).toEqual(expect.arrayContaining(['schema.required', 'schema.maximum', 'schema.type', 'schema.additionalProperties']));
    expect(new Set(verdict.detections).size).toBe(verdict.detections.length);
  });

  it('writes pointers in RFC 6901 form, escaping "~" and "/" in property names', async () => {
    expect(await failures({ 'a/b': 1, 'c~d e': 1 }, { additionalProperties: { type: 'string' } })).toEqual(expect.arrayContaining(['type at "/a~1b"', 'type at "/c~0d e"']));
  });

  it('never treats an inherited property as present for required', async () => {
    for (const name of ['toString', 'constructor', '__proto__', 'hasOwnProperty']) {
      const verdict = await check({}, { type: 'object', required: [name] });
      expect(verdict).toMatchObject({ action: 'deny', detections: ['schema.required'] });
    }
    expect((await check(JSON.parse('{"toString": 1}'), { required: ['toString'] })).action).toBe('allow');
  });

  it('lets no prototype key slip past properties and additionalProperties: false', async () => {
    const schema = { type: 'object', properties: { query: { type: 'string' } }, additionalProperties: false };
    for (const raw of ['{"query":"x","__proto__":{"admin":true}}', '{"query":"x","constructor":{"prototype":{}}}', '{"query":"x","toString":"y"}']) {
      const verdict = await check(JSON.parse(raw) as JsonValue, schema);
      expect(verdict.action).toBe('deny');
      expect(verdict.detections).toContain('schema.additionalProperties');
    }
  });

  it('validates a prototype key named in properties against its own schema', async () => {
    const schema = { properties: { __proto__: { type: 'string' }, constructor: { type: 'string' } } };
    const parsed = JSON.parse('{"properties":{"__proto__":{"type":"string"},"constructor":{"type":"string"}}}') as Record<string, JsonValue>;
    expect(await check(JSON.parse('{"__proto__": 12}') as JsonValue, parsed)).toMatchObject({ action: 'deny', detections: expect.arrayContaining(['schema.type']) });
    expect(await failures(JSON.parse('{"__proto__": 12}') as JsonValue, parsed)).toContain('type at "/__proto__"');
    expect(await failures(JSON.parse('{"constructor": 12}') as JsonValue, schema)).toContain('type at "/constructor"');
    expect((await check({}, schema)).action).toBe('allow');
  });

  it('reads $schema before the configured draft', async () => {
    const tuple = { items: [{ type: 'string' }], additionalItems: false };
    // Draft 7 reads array `items` as a tuple; under 2020-12 `additionalItems` is unknown.
    expect((await check(['a', 'b'], { $schema: 'http://json-schema.org/draft-07/schema#', ...tuple })).action).toBe('deny');
    expect((await check(['a', 'b'], tuple, '7')).action).toBe('deny');
    expect((await check({ n: 5 }, { $schema: 'http://json-schema.org/draft-04/schema#', properties: { n: { maximum: 5, exclusiveMaximum: true } } })).action).toBe('deny');
  });

  it('denies as partial when the schema cannot be used, never allows', async () => {
    const cases: Record<string, JsonValue>[] = [
      { $schema: 'http://json-schema.org/draft-03/schema#' },
      { $ref: '#/$defs/missing' },
      { properties: { q: { pattern: '(' } } },
      { $dynamicRef: '#meta' },
    ];
    for (const schema of cases) {
      expect(await check({ q: 'x' }, schema)).toMatchObject({ action: 'deny', outcome: 'partial', detections: ['schema.unusable'] });
    }
  });

  it('denies as partial a tool without an input schema unless told to allow it', async () => {
    expect(await check({ q: 'x' })).toMatchObject({ action: 'deny', outcome: 'partial' });
    expect((await createSchemaGuardrail({ onMissingSchema: 'allow' }).check(toolArgs({ q: 'x' }))).action).toBe('allow');
  });

  it('resolves $ref to remote schemas from memory only', async () => {
    const remotes = { 'https://schemas.example/money.json': { type: 'object', required: ['amount'], properties: { amount: { type: 'number' } } } };
    const schema = { properties: { price: { $ref: 'https://schemas.example/money.json' } } };
    expect(await validateAgainstSchema(schema, { price: { amount: 3 } }, { remotes })).toEqual({ ok: true });
    expect(await validateAgainstSchema(schema, { price: {} }, { remotes })).toMatchObject({ ok: false, code: 'SCHEMA.INVALID_ARGUMENTS' });
    expect(await validateAgainstSchema(schema, { price: {} })).toMatchObject({ ok: false, code: 'SCHEMA.UNUSABLE' });
  });

  it('never fetches: a $ref to a document not given in memory denies as partial', async () => {
    const realFetch = globalThis.fetch;
    const fetched: unknown[] = [];
    globalThis.fetch = ((...args: unknown[]) => {
      fetched.push(args[0]);
      return Promise.reject(new Error('no network in this test'));
    }) as typeof fetch;
    try {
      for (const $ref of ['https://schemas.example/money.json', 'http://schemas.example/money.json', 'file:///etc/passwd', 'money.json']) {
        expect(await check({ price: 1 }, { properties: { price: { $ref } } })).toMatchObject({ action: 'deny', outcome: 'partial', detections: ['schema.unusable'] });
      }
      expect(await check({ price: 1 }, { $schema: 'https://schemas.example/meta.json' })).toMatchObject({ action: 'deny', outcome: 'partial' });
    } finally {
      globalThis.fetch = realFetch;
    }
    expect(fetched).toEqual([]);
  });

  it('validates $dynamicRef against the dynamic scope', async () => {
    const tree = {
      $id: 'https://schemas.example/tree',
      $dynamicAnchor: 'node',
      type: 'object',
      properties: { children: { type: 'array', items: { $dynamicRef: '#node' } } },
    };
    const strictTree = { $id: 'https://schemas.example/strict-tree', $dynamicAnchor: 'node', $ref: 'tree', unevaluatedProperties: false };
    const remotes = { 'https://schemas.example/tree': tree };
    const guardrail = createSchemaGuardrail({ remotes });
    const call = (value: JsonValue) => guardrail.check({ ...toolArgs(value, strictTree) });
    expect((await call({ children: [{ children: [] }] })).action).toBe('allow');
    const denied = await call({ children: [{ daat: 1 }] });
    expect(denied).toMatchObject({ action: 'deny', outcome: 'complete' });
    expect(await failures({ children: [{ daat: 1 }] }, strictTree, { remotes })).toContain('unevaluatedProperties at "/children/0"');
  });

  it('reads $anchor, $id and draft 4 id inside enum and const values as data, not identifiers', async () => {
    const asData: [Record<string, JsonValue>, JsonValue, string][] = [
      [{ enum: [{ $anchor: 'a', type: 'null' }] }, { $anchor: 'a', type: 'null' }, 'schema.enum'],
      [{ const: { $id: 'https://schemas.example/x' } }, { $id: 'https://schemas.example/x' }, 'schema.const'],
      [{ $schema: 'http://json-schema.org/draft-04/schema#', enum: [{ id: 'x' }] }, { id: 'x' }, 'schema.enum'],
      [{ enum: [{ $ref: '#' }] }, { $ref: '#' }, 'schema.enum'],
    ];
    for (const [schema, value, detection] of asData) {
      expect((await check(value, schema)).action).toBe('allow');
      // The value is compared whole: nothing was stripped from it or taken out of it.
      expect(await check({ type: 'null' }, schema)).toMatchObject({ action: 'deny', outcome: 'complete', detections: [detection] });
    }
    // An anchor that exists only inside a value is nothing a $ref can reach.
    const reachesData = { $defs: { s: { enum: [{ $anchor: 'hidden' }] } }, $ref: '#hidden' };
    expect(await check({ $anchor: 'hidden' }, reachesData)).toMatchObject({ action: 'deny', outcome: 'partial', detections: ['schema.unusable'] });
  });

  it('prepares a schema once per guardrail, concurrent first checks included', async () => {
    const guardrail = createSchemaGuardrail();
    const verdicts = await Promise.all([guardrail.check(toolArgs({ query: 'a' }, searchSchema)), guardrail.check(toolArgs({ limit: 0 }, searchSchema))]);
    expect(verdicts.map((v) => v.action)).toEqual(['allow', 'deny']);
    // Once prepared, a check validates without waiting.
    expect(guardrail.check(toolArgs({ query: 'b' }, searchSchema))).toEqual({ action: 'allow', outcome: 'complete', detections: [] });
  });

  it('asserts format', async () => {
    const schema = { properties: { to: { type: 'string', format: 'email' }, at: { type: 'string', format: 'date-time' } } };
    expect((await check({ to: 'ops@example.com', at: '2026-01-02T03:04:05Z' }, schema)).action).toBe('allow');
    expect(await check({ to: 'not an address', at: 'yesterday' }, schema)).toMatchObject({ action: 'deny', detections: expect.arrayContaining(['schema.format']) });
    expect(await failures({ to: 'not an address', at: 'yesterday' }, schema)).toEqual(expect.arrayContaining(['format at "/to"', 'format at "/at"']));
  });

  it('does not modify the tool schema it validates against', async () => {
    const schema = { $defs: { s: { type: 'string' } }, properties: { q: { $ref: '#/$defs/s' } } };
    const before = JSON.stringify(schema);
    await check({ q: 1 }, schema);
    expect(Object.getOwnPropertyNames(schema.properties.q)).toEqual(['$ref']);
    expect(JSON.stringify(schema)).toBe(before);
  });

  it('validates with code generation from strings forbidden (Function and eval throw)', async () => {
    const realFunction = globalThis.Function;
    const realEval = globalThis.eval;
    const forbidden = (): never => {
      throw new EvalError('code generation from strings is forbidden');
    };
    const verdicts: GuardrailVerdict[] = [];
    const guardrail = createSchemaGuardrail();
    try {
      globalThis.Function = forbidden as unknown as FunctionConstructor;
      globalThis.eval = forbidden;
      verdicts.push(await guardrail.check(toolArgs({ query: 'ok', limit: 3 }, searchSchema)));
      verdicts.push(await guardrail.check(toolArgs({ limit: 0 }, searchSchema)));
    } finally {
      globalThis.Function = realFunction;
      globalThis.eval = realEval;
    }
    expect(verdicts.map((v) => [v.action, v.outcome])).toEqual([
      ['allow', 'complete'],
      ['deny', 'complete'],
    ]);
  });

  it('denies a $ref cycle that makes no progress as a failure, without overflowing the stack', async () => {
    const $defs = { a: { allOf: [{ $ref: '#/$defs/b' }] }, b: { allOf: [{ $ref: '#/$defs/a' }] } };
    expect(await check({}, { $defs, $ref: '#/$defs/a' })).toMatchObject({ action: 'deny', outcome: 'complete', detections: ['schema.$ref'] });
    // Under `not` too: the cycle fails the whole check, so `not` cannot turn it into an allow.
    expect(await check({}, { $defs, not: { $ref: '#/$defs/a' } })).toMatchObject({ action: 'deny', outcome: 'complete' });
  });

  it('denies as partial, never with a RangeError, arguments or schemas nested past the limits', async () => {
    let deepArguments: JsonValue = 1;
    for (let i = 0; i < 50_000; i++) deepArguments = [deepArguments];
    expect(await check(deepArguments, { items: { $ref: '#' } } as Record<string, JsonValue>)).toMatchObject({ action: 'deny', outcome: 'partial', detections: ['schema.unusable'] });
    let deepSchema: Record<string, JsonValue> = { type: 'string' };
    for (let i = 0; i < 50_000; i++) deepSchema = { properties: { a: deepSchema } };
    expect(await check({}, deepSchema)).toMatchObject({ action: 'deny', outcome: 'partial', detections: ['schema.unusable'] });
    let nested: Record<string, JsonValue> = {};
    for (let i = 0; i < 100; i++) nested = { a: nested };
    expect((await check(nested, { $defs: { n: { properties: { a: { $ref: '#/$defs/n' } } } }, $ref: '#/$defs/n' })).action).toBe('allow');
  });

  it('compares numbers and strings as JSON does: exact decimal multipleOf, lengths in code points', async () => {
    expect((await check(0.0075, { multipleOf: 0.0001 })).action).toBe('allow');
    expect((await check(0.00751, { multipleOf: 0.0001 })).action).toBe('deny');
    expect((await check('💩💩', { maxLength: 2, minLength: 2 })).action).toBe('allow');
    expect((await check([1, 1.0], { uniqueItems: true })).action).toBe('deny');
    expect((await check([{ a: 1, b: 2 }, { b: 2, a: 1 }], { uniqueItems: true })).action).toBe('deny');
  });

  it('refuses a custom meta-schema that requires a vocabulary it does not implement', async () => {
    const remotes = {
      'https://schemas.example/meta': {
        $schema: 'https://json-schema.org/draft/2020-12/schema',
        $id: 'https://schemas.example/meta',
        $vocabulary: { 'https://json-schema.org/draft/2020-12/vocab/core': true, 'https://schemas.example/vocab/unknown': true },
      },
    };
    expect(await validateAgainstSchema({ $schema: 'https://schemas.example/meta', type: 'string' }, 1, { remotes })).toMatchObject({ ok: false, code: 'SCHEMA.UNUSABLE' });
  });

  it('refuses a schema that fails its meta-schema', async () => {
    expect(await check({ q: 'x' }, { properties: { q: { minLength: -1 } } })).toMatchObject({ action: 'deny', outcome: 'partial', detections: ['schema.unusable'] });
    expect(await check({ q: 'x' }, { type: 'text' })).toMatchObject({ action: 'deny', outcome: 'partial', detections: ['schema.unusable'] });
  });

  it('refuses an unknown draft when configured', () => {
    expect(() => createSchemaGuardrail({ draft: '6' as never })).toThrow(RangeError);
  });
});

describe('identifiers are read where the drafts say, and only there', () => {
  const guardrail = createSchemaGuardrail({ draft: '7' });
  const judge = (inputSchema: Record<string, JsonValue>, value: JsonValue) =>
    Promise.resolve(guardrail.check({ placement: 'tool-args', value, tool: { id: 't', inputSchema }, context: {}, signal: new AbortController().signal }));

  it('ignores an $id beside $ref before 2019-09, so $ref resolves against the enclosing base URI', async () => {
    const schema = {
      $id: 'http://x.invalid/root/',
      definitions: { integer: { $id: 'http://x.invalid/a', type: 'integer' }, text: { $id: 'a', type: 'string' } },
      allOf: [{ $id: 'http://x.invalid/', $ref: 'a' }],
    } as Record<string, JsonValue>;
    // `a` is http://x.invalid/root/a (the string schema), not http://x.invalid/a.
    await expect(judge(schema, 'text')).resolves.toMatchObject({ action: 'allow', outcome: 'complete' });
    await expect(judge(schema, 1)).resolves.toMatchObject({ action: 'deny', outcome: 'complete' });
  });

  it('takes no $id inside an unknown keyword for an identifier, and keeps property names and required entries that merely look like one', async () => {
    const unknownKeyword = { anyOf: [{ $ref: 'http://x.invalid/y' }], x: { $id: 'http://x.invalid/y', type: 'integer' } } as Record<string, JsonValue>;
    await expect(judge(unknownKeyword, 1)).resolves.toMatchObject({ action: 'deny', outcome: 'partial', detections: ['schema.unusable'] });
    const fine = { type: 'object', properties: { $id: { type: 'string' } }, required: ['$id'] } as Record<string, JsonValue>;
    await expect(judge(fine, { $id: 'ok' })).resolves.toMatchObject({ action: 'allow', outcome: 'complete' });
  });
});
