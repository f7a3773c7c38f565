// Duraton's guardrail port tried as a Duraton user would, row by row of docs/migrating/duraton.md
// (the row id leads each describe): guardrails written for Duraton, its adapters, its lookups and
// its step.ai.check. Loop rows are in duraton-loop.spec.ts; verdict replay in guardrails/verdict-*.
import { describe, expect, it } from '@jest/globals';
import { readFileSync } from 'node:fs';
import { AuditLogger } from '../../audit/audit-logger.js';
import { check, GuardrailHaltError } from '../../guardrails/check.js';
import { createModerationGuardrail } from '../../guardrails/moderation-guardrail.js';
import { createPiiGuardrail } from '../../guardrails/pii-guardrail.js';
import { guardrailByName } from '../../guardrails/registry.js';
import { runGuardrails } from '../../guardrails/run-guardrails.js';
import { createSchemaGuardrail } from '../../guardrails/schema-guardrail.js';
import { type Guardrail, type GuardrailInput, type GuardrailPlacement } from '../../guardrails/types.js';
import { type DuratonGuardrail, duratonGuardrail, getGuardrail } from './duraton-guardrail.js';

const signal = new AbortController().signal;
const input = (placement: GuardrailPlacement, value: GuardrailInput['value'], tool?: GuardrailInput['tool']): GuardrailInput => ({ placement, value, ...(tool ? { tool } : {}), context: {}, signal });
const CREDIT_SCHEMA = { type: 'object', properties: { amount: { type: 'number' } }, required: ['amount'], additionalProperties: false };

/** The seed's own example, verbatim but for the type import. */
const noExternalRecipients: DuratonGuardrail = {
  name: 'recipient-policy',
  placements: ['tool-args'],
  check: async ({ value, tool }) => {
    const to = (value as { to?: string }).to ?? '';
    if (to.endsWith('@example.com')) {
      return { action: 'allow', outcome: 'complete', detections: [] };
    }
    return {
      action: 'deny',
      outcome: 'complete',
      detections: [{ rule: 'recipient.external', detected: true }],
      reason: `${tool} may only send to internal recipients`,
    };
  },
};

describe('D34 a guardrail answering Duraton detections [{ rule, detected }]', () => {
  it('is understood: an allow with no detections allows, where it used to become deny/partial', async () => {
    const decision = await runGuardrails([duratonGuardrail(noExternalRecipients)], input('tool-args', { to: 'ops@example.com' }, { id: 'send-email' }));
    expect(decision).toMatchObject({ verdict: { action: 'allow', outcome: 'complete' }, by: undefined });
    expect(decision.fault).toBeUndefined();
  });

  it('denies with the rule as the detection when it is declared, and as `undeclared` when it is not', async () => {
    const declared = duratonGuardrail({ ...noExternalRecipients, detections: ['recipient.external'] });
    const args = input('tool-args', { to: 'eve@attacker.test' }, { id: 'send-email' });
    expect((await runGuardrails([declared], args)).verdict).toMatchObject({ action: 'deny', outcome: 'complete', detections: ['recipient.external'] });
    expect((await runGuardrails([duratonGuardrail(noExternalRecipients)], args)).verdict).toMatchObject({ action: 'deny', detections: ['undeclared'] });
  });

  it('names nothing for a rule that was checked and not detected, without a guardrail wrapper too', async () => {
    const raw = { name: 'raw', placements: ['egress'], detections: ['r.hit', 'r.miss'], check: () => ({ action: 'observe', outcome: 'complete', detections: [{ rule: 'r.miss', detected: false }, { rule: 'r.hit', detected: true }, 'r.hit'] }) } as unknown as Guardrail;
    expect((await runGuardrails([raw], input('egress', 'x'))).verdict).toMatchObject({ action: 'observe', detections: ['r.hit'] });
  });

  it('never records what else a detection object carries, nor a rule name made from the value', async () => {
    const leaky = { name: 'leaky', placements: ['egress'], detections: ['leak.hit'], check: ({ value }: GuardrailInput) => ({ action: 'deny', outcome: 'complete', detections: [{ rule: 'leak.hit', detected: true, match: value }, { rule: `card-${String(value)}`, detected: true }] }) } as unknown as Guardrail;
    const audit = new AuditLogger();
    const result = await check('leak', { guardrails: [leaky], input: { placement: 'egress', value: '4111111111111111' }, audit });
    expect(result.verdict.detections).toEqual(['leak.hit', 'undeclared']);
    expect(JSON.stringify([result, audit.events()])).not.toContain('4111111111111111');
  });

  it('refuses a detection that is neither a name nor { rule, detected } (deny/partial, invalid verdict)', async () => {
    const odd = { name: 'odd', placements: ['egress'], check: () => ({ action: 'allow', outcome: 'complete', detections: [{ rule: 'r', detected: 'yes' }] }) } as unknown as Guardrail;
    expect(await runGuardrails([odd], input('egress', 'x'))).toMatchObject({ fault: 'invalid-verdict', verdict: { action: 'deny', outcome: 'partial' } });
  });
});

describe('D33 outcome `failed`', () => {
  it('exists, and fails closed: a failed allow, observe or mask denies, with fault `failed` and no payload', async () => {
    for (const action of ['allow', 'observe', 'mask'] as const) {
      const failing = { name: 'down', placements: ['egress'], check: () => ({ action, outcome: 'failed', detections: [], payload: 'x' }) } as unknown as Guardrail;
      const decision = await runGuardrails([failing], input('egress', 'x'));
      expect(decision).toMatchObject({ by: 'down', fault: 'failed', verdict: { action: 'deny', outcome: 'failed', reason: 'guardrail.failed' } });
      expect(decision.verdict.payload).toBeUndefined();
    }
  });

  it('keeps a failed halt a halt, and a catalogue reason the guardrail gave', async () => {
    const failing: Guardrail = { name: 'down', placements: ['egress'], check: () => ({ action: 'halt', outcome: 'failed', detections: [], reason: 'moderation.failed' }) };
    expect((await runGuardrails([failing], input('egress', 'x'))).verdict).toMatchObject({ action: 'halt', outcome: 'failed', reason: 'moderation.failed' });
  });

  it('is recorded as an error decision (GUARDRAIL.FAULT) and trips check()', async () => {
    const audit = new AuditLogger();
    const failing: Guardrail = { name: 'down', placements: ['pre-prompt'], check: () => ({ action: 'deny', outcome: 'failed', detections: [] }) };
    const result = await check('failed', { guardrails: [failing], input: { placement: 'pre-prompt', value: 'q' }, audit });
    expect(result).toMatchObject({ tripped: true, verdict: { outcome: 'failed' } });
    expect(audit.events()[0]).toMatchObject({ decision: 'error', code: 'GUARDRAIL.FAULT', detail: { outcome: 'failed', fault: 'failed' } });
  });
});

describe('D35 the tool as a name', () => {
  it('is what a wrapped Duraton guardrail gets, with the tool schema as `schema`', async () => {
    const seen: unknown[] = [];
    const spy = duratonGuardrail({ name: 'spy', placements: ['tool-args'], check: ({ tool, schema }) => { seen.push({ tool, schema }); return { action: 'allow', outcome: 'complete', detections: [] }; } });
    await runGuardrails([spy], input('tool-args', { amount: 1 }, { id: 'issue-credit', inputSchema: CREDIT_SCHEMA }));
    expect(seen).toEqual([{ tool: 'issue-credit', schema: CREDIT_SCHEMA }]);
  });

  it('lets a Duraton guardrail that selects by name deny its tool and only that one', async () => {
    const onlySend = duratonGuardrail({ name: 'no-send', placements: ['tool-args'], check: ({ tool }) => (tool === 'send-email' ? { action: 'deny', outcome: 'complete', detections: [] } : { action: 'allow', outcome: 'complete', detections: [] }) });
    expect((await runGuardrails([onlySend], input('tool-args', {}, { id: 'send-email' }))).verdict.action).toBe('deny');
    expect((await runGuardrails([onlySend], input('tool-args', {}, { id: 'search' }))).verdict.action).toBe('allow');
  });

  it('keeps gatehouse\'s object form for gatehouse guardrails', async () => {
    const seen: unknown[] = [];
    const native: Guardrail = { name: 'native', placements: ['tool-args'], check: ({ tool }) => { seen.push(tool); return { action: 'allow', outcome: 'complete', detections: [] }; } };
    await runGuardrails([native], input('tool-args', {}, { id: 'search', inputSchema: CREDIT_SCHEMA }));
    expect(seen).toEqual([{ id: 'search', inputSchema: CREDIT_SCHEMA }]);
  });

  it('is accepted by check() as `tool` with `schema` beside it, as is the { id, inputSchema } object', async () => {
    const schema = createSchemaGuardrail();
    const byName = await check('by-name', { guardrails: [schema], input: { placement: 'tool-args', value: { reason: 'duplicate' }, tool: 'issue-credit', schema: CREDIT_SCHEMA } });
    const byObject = await check('by-object', { guardrails: [schema], input: { placement: 'tool-args', value: { reason: 'duplicate' }, tool: { id: 'issue-credit', inputSchema: CREDIT_SCHEMA } } });
    expect(byName).toMatchObject({ tripped: true, verdict: { action: 'deny', detections: expect.arrayContaining(['schema.required', 'schema.additionalProperties']) as never } });
    expect(byObject.verdict).toEqual(byName.verdict);
  });

  it('refuses a schema without a tool name, a schema beside a tool object, and an empty name', async () => {
    const guardrails = [createSchemaGuardrail()];
    await expect(check('x', { guardrails, input: { placement: 'tool-args', value: {}, schema: CREDIT_SCHEMA } })).rejects.toThrow('schema needs a tool name');
    await expect(check('x', { guardrails, input: { placement: 'tool-args', value: {}, tool: { id: 't' }, schema: CREDIT_SCHEMA } })).rejects.toThrow(TypeError);
    await expect(check('x', { guardrails, input: { placement: 'tool-args', value: {}, tool: '' } })).rejects.toThrow(TypeError);
  });
});

describe('D36 a free-text reason', () => {
  it('is dropped: the record and the result show the action\'s fixed sentence, never the text', async () => {
    const audit = new AuditLogger();
    const result = await check('send', { guardrails: [duratonGuardrail(noExternalRecipients)], input: { placement: 'tool-args', value: { to: 'eve@attacker.test' }, tool: 'send-email' }, audit });
    expect(result.verdict.reason).toBeUndefined();
    expect(audit.events()[0]).toMatchObject({ code: 'GUARDRAIL.DENIED', reason: 'refused by a guardrail', detail: { reasonCode: 'guardrail.denied' } });
    expect(JSON.stringify(audit.events())).not.toContain('internal recipients');
  });
});

describe('D12 lookups by name', () => {
  it('resolves `schema` through getGuardrail and guardrailByName, with options, and refuses unknown options', async () => {
    for (const lookup of [getGuardrail, guardrailByName]) {
      const schema = lookup('schema');
      expect(schema.name).toBe('schema');
      expect(await schema.check(input('tool-args', { amount: 5 }, { id: 'issue-credit', inputSchema: CREDIT_SCHEMA }))).toMatchObject({ action: 'allow' });
      expect(await lookup('schema', { onMissingSchema: 'allow' }).check(input('tool-args', {}, { id: 'schemaless' }))).toMatchObject({ action: 'allow' });
      expect(() => lookup('schema', { dialect: '7' })).toThrow(TypeError);
    }
  });

  it('throws GUARDRAIL.UNKNOWN for a name nobody registered', () => {
    expect(() => getGuardrail('toxicity')).toThrow(expect.objectContaining({ code: 'GUARDRAIL.UNKNOWN' }) as never);
  });
});

describe('D11 getGuardrail("moderation") without a classifier', () => {
  it('faults on every check rather than allowing', async () => {
    const result = await check('lookup', { guardrails: [getGuardrail('moderation')], input: { placement: 'post-model', value: 'hi' } });
    expect(result).toMatchObject({ tripped: true, verdict: { action: 'deny', outcome: 'partial', reason: 'moderation.no-classifier' } });
  });
});

describe('D8 the adapters\' default actions', () => {
  it('schema denies, pii masks, moderation halts', async () => {
    expect(await createSchemaGuardrail().check(input('tool-args', {}, { id: 't', inputSchema: CREDIT_SCHEMA }))).toMatchObject({ action: 'deny' });
    expect(await createPiiGuardrail().check(input('pre-prompt', 'mail jane@example.com'))).toMatchObject({ action: 'mask', payload: 'mail [EMAIL]' });
    expect(await createModerationGuardrail({ classify: () => ({ flagged: true }) }).check(input('pre-prompt', 'x'))).toMatchObject({ action: 'halt' });
  });
});

describe('D1 no JSON Schema engine to install', () => {
  it('validates without @cfworker/json-schema: the interpreter ships with gatehouse', async () => {
    // The workspace installs it as a benchmark peer (issue 22), so what counts is that neither the
    // guard nor the schema library depends on it: a user's install does not bring it.
    for (const manifest of ['../../../package.json', '../../../../json-schema/package.json']) {
      const { dependencies = {}, peerDependencies = {} } = JSON.parse(readFileSync(new URL(manifest, import.meta.url), 'utf8')) as Record<string, Record<string, string>>;
      expect(Object.keys({ ...dependencies, ...peerDependencies })).not.toContain('@cfworker/json-schema');
    }
    expect(await createSchemaGuardrail().check(input('tool-args', { amount: 'ten' }, { id: 't', inputSchema: CREDIT_SCHEMA }))).toMatchObject({ action: 'deny', detections: ['schema.properties', 'schema.type'] });
  });
});

describe('D9 createPiiGuardrail({ rules })', () => {
  it('applies only the rules listed, and finds E.164 phones, Luhn-valid cards in an issuer\'s range and IPv4', async () => {
    const some = createPiiGuardrail({ rules: ['credit-card', 'email'] });
    expect(await some.check(input('pre-prompt', 'jane@example.com +14155550123 4111 1111 1111 1111'))).toMatchObject({ payload: '[EMAIL] +14155550123 [CARD]', detections: ['pii.email', 'pii.credit-card'] });
    expect(await createPiiGuardrail().check(input('pre-prompt', 'call +447911123456 from 10.0.0.1'))).toMatchObject({ payload: 'call [PHONE] from [IPV4]' });
  });

  it('does not take a Luhn-valid number outside every issuer range for a card (a deliberate difference)', async () => {
    // 1000 0000 0000 0008 passes Luhn but no issuer starts with 1: timestamps and ids look like it.
    expect(await createPiiGuardrail({ rules: ['credit-card'] }).check(input('pre-prompt', 'id 1000000000000008'))).toMatchObject({ action: 'allow' });
  });
});

describe('D10 createModerationGuardrail({ classify, threshold })', () => {
  it('takes Duraton\'s classifier as it is, and names a category only when `categories` lists it', async () => {
    const classify = async (text: string) => ({ flagged: text.includes('awful'), categories: ['violence'] });
    expect(await createModerationGuardrail({ classify, threshold: 0.8 }).check(input('pre-prompt', 'awful'))).toMatchObject({ action: 'halt', detections: ['moderation.flagged'] });
    expect(await createModerationGuardrail({ classify, threshold: 0.8, categories: ['violence'] }).check(input('pre-prompt', 'awful'))).toMatchObject({ detections: ['moderation.violence'] });
    expect(await createModerationGuardrail({ classify: () => ({ score: 0.81 }), threshold: 0.8 }).check(input('pre-prompt', 'x'))).toMatchObject({ action: 'halt' });
    expect(await createModerationGuardrail({ classify: () => ({ score: 0.8 }), threshold: 0.8 }).check(input('pre-prompt', 'x'))).toMatchObject({ action: 'allow' });
  });
});

describe('D13 pii actions', () => {
  it('masks by default and denies, halts or observes when told to', async () => {
    for (const action of ['deny', 'halt', 'observe'] as const) {
      expect(await createPiiGuardrail({ action }).check(input('egress', 'jane@example.com'))).toMatchObject({ action, detections: ['pii.email'] });
    }
  });
});

describe('D32 a detector that is down', () => {
  it('reads as deny/partial, never as clean', async () => {
    const down: Guardrail = { name: 'down', placements: ['tool-args'], check: () => { throw new Error('classifier unreachable'); } };
    expect(await runGuardrails([down], input('tool-args', {}))).toMatchObject({ fault: 'threw', verdict: { action: 'deny', outcome: 'partial' } });
  });
});

describe('D37 order', () => {
  it('asks in order; the first verdict that is not allow wins, so a later guardrail cannot overturn a refusal', async () => {
    const asked: string[] = [];
    const g = (name: string, action: 'allow' | 'deny'): Guardrail => ({ name, placements: ['egress'], check: () => { asked.push(name); return { action, outcome: 'complete', detections: [] }; } });
    expect(await runGuardrails([g('a', 'allow'), g('b', 'deny'), g('c', 'allow')], input('egress', 'x'))).toMatchObject({ by: 'b', verdict: { action: 'deny' } });
    expect(asked).toEqual(['a', 'b']);
  });

  it('skips a guardrail that does not declare the placement', async () => {
    const promptOnly: Guardrail = { name: 'prompt-only', placements: ['pre-prompt'], check: () => ({ action: 'deny', outcome: 'complete', detections: [] }) };
    expect(await runGuardrails([promptOnly], input('tool-args', {}))).toMatchObject({ ran: [], verdict: { action: 'allow' } });
  });
});

describe('D40 observe', () => {
  it('changes nothing and records the detection', async () => {
    const audit = new AuditLogger();
    const result = await check('observe', { guardrails: [createPiiGuardrail({ action: 'observe' })], input: { placement: 'pre-prompt', value: 'jane@example.com' }, audit });
    expect(result).toMatchObject({ tripped: false, value: 'jane@example.com' });
    expect(audit.events()[0]).toMatchObject({ decision: 'observed', detections: ['pii.email'] });
  });
});

describe('D41 the dialect a schema is read in', () => {
  it('reads $schema when declared, else the draft configured (default 2020-12)', async () => {
    // In draft 7 an `items` array validates by position; 2020-12 has prefixItems instead.
    const tuple = { type: 'array', items: [{ type: 'number' }] };
    const args = input('tool-args', ['one'] as never, { id: 't', inputSchema: tuple });
    expect(await createSchemaGuardrail({ draft: '7' }).check(args)).toMatchObject({ action: 'deny' });
    expect(await createSchemaGuardrail().check(args)).toMatchObject({ action: 'deny', outcome: 'partial' });
    const declared = input('tool-args', ['one'] as never, { id: 't', inputSchema: { $schema: 'http://json-schema.org/draft-07/schema#', ...tuple } });
    expect(await createSchemaGuardrail().check(declared)).toMatchObject({ action: 'deny', outcome: 'complete', detections: ['schema.items', 'schema.type'] });
  });

  it('supports drafts 4, 7, 2019-09 and 2020-12 and refuses another', () => {
    for (const draft of ['4', '7', '2019-09', '2020-12'] as const) expect(() => createSchemaGuardrail({ draft })).not.toThrow();
    expect(() => createSchemaGuardrail({ draft: '6' as never })).toThrow(RangeError);
  });
});

describe('D7 a tool that declares no inputSchema', () => {
  it('is denied (deny/partial, schema.missing) unless the schema guardrail is told onMissingSchema: allow', async () => {
    const schemaless = input('tool-args', { anything: true }, { id: 'legacy-tool' });
    expect(await createSchemaGuardrail().check(schemaless)).toMatchObject({ action: 'deny', outcome: 'partial', reason: 'schema.missing' });
    expect(await createSchemaGuardrail({ onMissingSchema: 'allow' }).check(schemaless)).toMatchObject({ action: 'allow', outcome: 'complete' });
  });
});

describe('D22 a halt inside check()', () => {
  it('throws GuardrailHaltError (GUARDRAIL.HALTED, not retryable) instead of returning, after recording the decision', async () => {
    const audit = new AuditLogger();
    const halting = createModerationGuardrail({ classify: () => ({ flagged: true }) });
    const error = await check('moderate', { guardrails: [halting], input: { placement: 'pre-prompt', value: 'q' }, audit }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(GuardrailHaltError);
    expect(error).toMatchObject({ code: 'GUARDRAIL.HALTED', retryable: false, by: 'moderation', stage: 'input', details: { check: 'moderate', guardrail: 'moderation', reasonCode: 'moderation.flagged' } });
    expect(audit.events()).toHaveLength(1);
    expect(audit.events()[0]).toMatchObject({ code: 'GUARDRAIL.HALTED' });
  });

  it('never runs the guarded call, and halts on the output check too', async () => {
    let calls = 0;
    const halting = createModerationGuardrail({ classify: (text) => ({ flagged: text.includes('bad') }) });
    await expect(check('in', { guardrails: [halting], input: { placement: 'pre-prompt', value: 'bad' }, call: () => ++calls })).rejects.toBeInstanceOf(GuardrailHaltError);
    expect(calls).toBe(0);
    await expect(check<string>('out', { guardrails: [halting], call: () => 'bad answer', output: (a) => ({ placement: 'post-model', value: a }) })).rejects.toMatchObject({ stage: 'output' });
  });

  it('aborts a call running beside it before it throws', async () => {
    let aborted = false;
    const halting = createModerationGuardrail({ classify: () => ({ flagged: true }) });
    const call = (s: AbortSignal) => new Promise<string>((_resolve, reject) => s.addEventListener('abort', () => { aborted = true; reject(new Error('aborted')); }));
    await expect(check('race', { guardrails: [halting], input: { placement: 'pre-prompt', value: 'q' }, parallel: true, call })).rejects.toBeInstanceOf(GuardrailHaltError);
    expect(aborted).toBe(true);
  });
});

describe('D24 what check() returns', () => {
  it('trips on deny and approve, not on mask or rewrite, and names the deciding guardrail as `by`', async () => {
    const g = (action: 'deny' | 'approve' | 'rewrite'): Guardrail => ({ name: `g-${action}`, placements: ['pre-prompt'], check: () => ({ action, outcome: 'complete', detections: [], ...(action === 'rewrite' ? { payload: 'fixed' } : {}) }) });
    expect(await check('a', { guardrails: [g('deny')], input: { placement: 'pre-prompt', value: 'q' } })).toMatchObject({ tripped: true, by: 'g-deny' });
    expect(await check('b', { guardrails: [g('approve')], input: { placement: 'pre-prompt', value: 'q' } })).toMatchObject({ tripped: true, by: 'g-approve' });
    expect(await check('c', { guardrails: [g('rewrite')], input: { placement: 'pre-prompt', value: 'q' } })).toMatchObject({ tripped: false, value: 'fixed', by: 'g-rewrite' });
  });

  it('returns the output check\'s verdict when it ran and the input cleared, and the call\'s result', async () => {
    const result = await check<string>('both', { guardrails: [createPiiGuardrail()], input: { placement: 'pre-prompt', value: 'q' }, call: () => 'write to jane@example.com', output: (a) => ({ placement: 'post-model', value: a }) });
    expect(result).toMatchObject({ tripped: false, stage: 'output', verdict: { action: 'mask' }, value: 'write to [EMAIL]', result: 'write to jane@example.com' });
  });
});

describe('D26 a deny from check()', () => {
  it('does not throw: the trip is a value, and the call never runs', async () => {
    let calls = 0;
    const deny: Guardrail = { name: 'deny', placements: ['pre-prompt'], check: () => ({ action: 'deny', outcome: 'complete', detections: [] }) };
    await expect(check('d', { guardrails: [deny], input: { placement: 'pre-prompt', value: 'q' }, call: () => ++calls })).resolves.toMatchObject({ tripped: true });
    expect(calls).toBe(0);
  });
});

describe('D25 parallel: true', () => {
  it('aborts the call on a trip, says `cancelled`, and records the decision (there is no separate call step)', async () => {
    const audit = new AuditLogger();
    const deny: Guardrail = { name: 'slow-deny', placements: ['pre-prompt'], check: async () => { await new Promise((r) => setTimeout(r, 5)); return { action: 'deny', outcome: 'complete', detections: [] }; } };
    const call = (s: AbortSignal) => new Promise<string>((_resolve, reject) => s.addEventListener('abort', () => reject(new Error('aborted'))));
    const result = await check('race', { guardrails: [deny], input: { placement: 'pre-prompt', value: 'q' }, parallel: true, call, audit });
    expect(result).toMatchObject({ tripped: true, cancelled: true });
    expect(result.result).toBeUndefined();
    expect(audit.events().map((e) => e.code)).toEqual(['GUARDRAIL.DENIED']);
  });
});

describe('D43 unknown options', () => {
  it('are refused by every factory and by check(), naming the key', async () => {
    expect(() => createSchemaGuardrail({ engine: 'cfworker' } as never)).toThrow('unknown option "engine"');
    expect(() => createPiiGuardrail({ rule: ['email'] } as never)).toThrow('unknown option "rule"');
    expect(() => createModerationGuardrail({ classify: () => ({ flagged: false }), treshold: 0.8 } as never)).toThrow('unknown option "treshold"');
    await expect(check('x', { guardrails: [], step: 'moderate' } as never)).rejects.toThrow('unknown option "step"');
    await expect(check('x', { guardrails: [], input: { placement: 'pre-prompt', value: 'q', kind: 'prompt' } } as never)).rejects.toThrow('unknown option "kind"');
  });

  it('refuses a guardrail that is not one when wrapped', () => {
    expect(() => duratonGuardrail({ name: 'x' } as never)).toThrow(TypeError);
  });
});
