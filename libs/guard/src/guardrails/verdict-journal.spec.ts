// Verdicts as recorded steps (Duraton's replay semantics), on both journals: the port's contract, the
// binding an attacker would try to get around, failures that must fail closed, and check() and the
// agent loop reading a recorded verdict back instead of asking the guardrail again. The crash of a
// real process is verdict-replay.e2e.spec.ts.
import { describe, expect, it } from '@jest/globals';
import { RequestContext } from '@mastra/core/request-context';
import { InMemoryStore, type MastraCompositeStore } from '@mastra/core/storage';
import { createTool } from '@mastra/core/tools';
import { type JsonValue } from '@gatehouse/contracts';
import { z } from 'zod';
import { createGuardedAgent } from '../agent/guarded-agent.js';
import { AuditLogger } from '../audit/audit-logger.js';
import { ACTOR_CONTEXT_KEY, AGENT_AUDIT_CONTEXT_KEY } from '../context.js';
import { scriptedModel } from '../testing/scripted-model.js';
import { check, GuardrailHaltError } from './check.js';
import { createMastraVerdictJournal } from './mastra-verdict-journal.js';
import { runGuardrails } from './run-guardrails.js';
import { type Guardrail, type GuardrailAction, type GuardrailPlacement } from './types.js';
import { createInMemoryVerdictJournal, judgeOnce, type VerdictBinding, type VerdictJournal } from './verdict-journal.js';

const JOURNALS: readonly { readonly name: string; readonly make: () => VerdictJournal }[] = [
  { name: 'in memory', make: () => createInMemoryVerdictJournal() },
  { name: 'in a Mastra storage', make: () => createMastraVerdictJournal({ storage: new InMemoryStore() }) },
];

/** A guardrail that counts how often it is asked and answers `action`. */
function counted(action: GuardrailAction = 'allow', name = 'counted', placements: readonly GuardrailPlacement[] = ['tool-args', 'pre-prompt', 'post-model']): Guardrail & { calls: number } {
  const guardrail = {
    name,
    placements,
    detections: ['counted.hit'],
    calls: 0,
    check() {
      guardrail.calls += 1;
      return { action, outcome: 'complete' as const, detections: action === 'allow' ? [] : ['counted.hit'] };
    },
  };
  return guardrail as Guardrail & { calls: number };
}

const BINDING: VerdictBinding = { runId: 'run-1', tenant: 'acme', agentId: 'support', placement: 'tool-args', step: 'call-1', value: { amount: 10 }, tool: { id: 'refund' } };
const judgeWith = (guardrails: readonly Guardrail[], binding: VerdictBinding) => () =>
  runGuardrails(guardrails, { placement: binding.placement, value: binding.value, ...(binding.tool ? { tool: binding.tool } : {}), context: {}, signal: new AbortController().signal });

describe.each(JOURNALS)('a verdict journal $name', ({ make }) => {
  it('answers nothing for an id never recorded, and keeps the first entry recorded under an id', async () => {
    const journal = make();
    expect(await journal.read('id-1')).toBeUndefined();
    expect(await journal.record('id-1', { first: true })).toEqual({ first: true });
    expect(await journal.record('id-1', { first: false })).toEqual({ first: true });
    expect(await journal.read('id-1')).toEqual({ first: true });
  });

  it('settles two records racing for one id on one entry', async () => {
    const journal = make();
    const [a, b] = await Promise.all([journal.record('id-2', { writer: 'a' }), journal.record('id-2', { writer: 'b' })]);
    expect(a).toEqual(b);
  });

  it('reads a recorded verdict back on a resumed run instead of asking the guardrail again', async () => {
    const journal = make();
    const guardrail = counted('deny');
    const first = await judgeOnce(journal, BINDING, [guardrail], judgeWith([guardrail], BINDING));
    const resumed = await judgeOnce(journal, BINDING, [guardrail], judgeWith([guardrail], BINDING));
    expect(guardrail.calls).toBe(1);
    expect(first).toMatchObject({ replayed: false, decision: { by: 'counted', verdict: { action: 'deny', detections: ['counted.hit'] } } });
    expect(resumed).toEqual({ ...first, replayed: true });
  });

  it('reads a recorded fault back as the deny it was, without asking the guardrail again', async () => {
    const journal = make();
    let calls = 0;
    const flaky: Guardrail = { name: 'flaky', placements: ['tool-args'], check: () => { calls += 1; if (calls === 1) throw new Error('classifier down'); return { action: 'allow', outcome: 'complete', detections: [] }; } };
    await judgeOnce(journal, BINDING, [flaky], judgeWith([flaky], BINDING));
    const resumed = await judgeOnce(journal, BINDING, [flaky], judgeWith([flaky], BINDING));
    expect(resumed).toMatchObject({ replayed: true, decision: { fault: 'threw', verdict: { action: 'deny', outcome: 'partial' } } });
    expect(calls).toBe(1);
  });

  it.each([
    ['other arguments (an attacker resuming with the old allow)', { value: { amount: 10_000 } }],
    ['another tool schema', { tool: { id: 'refund', inputSchema: { type: 'object' } } }],
    ['another step', { step: 'call-2' }],
    ['another run', { runId: 'run-2' }],
    ['another tenant', { tenant: 'globex' }],
    ['another agent', { agentId: 'billing' }],
    ['another placement', { placement: 'pre-prompt' as const }],
  ])('judges again, never handing over the recorded allow, for %s', async (_name, change) => {
    const journal = make();
    const allowing = counted('allow');
    await judgeOnce(journal, BINDING, [allowing], judgeWith([allowing], BINDING));
    const denying = counted('deny');
    const other = { ...BINDING, ...change } as VerdictBinding;
    const { decision, replayed } = await judgeOnce(journal, other, [denying], judgeWith([denying], other));
    expect(replayed).toBe(false);
    expect(decision.verdict.action).toBe('deny');
    expect(denying.calls).toBe(1);
  });

  it('judges again when the guardrails that apply are not the ones the verdict was made by', async () => {
    const journal = make();
    const lenient = counted('allow');
    await judgeOnce(journal, BINDING, [lenient], judgeWith([lenient], BINDING));
    const strict = counted('deny', 'strict');
    const { decision } = await judgeOnce(journal, BINDING, [lenient, strict], judgeWith([lenient, strict], BINDING));
    expect(decision).toMatchObject({ by: 'strict', verdict: { action: 'deny' } });
  });
});

describe('a verdict journal that fails', () => {
  const failing = (part: 'read' | 'record'): VerdictJournal => ({
    read: async () => { if (part === 'read') throw new Error('disk on fire'); return undefined; },
    record: async () => { throw new Error('disk on fire'); },
  });

  it.each(['read', 'record'] as const)('denies with outcome failed when it cannot be %sed, and nothing acts on an unrecorded verdict', async (part) => {
    const guardrail = counted('allow');
    const { decision } = await judgeOnce(failing(part), BINDING, [guardrail], judgeWith([guardrail], BINDING));
    expect(decision).toMatchObject({ by: 'journal', fault: 'failed', verdict: { action: 'deny', outcome: 'failed', reason: 'guardrail.journal-unavailable' } });
    expect(guardrail.calls).toBe(part === 'read' ? 0 : 1);
  });

  it('denies (failed) for an entry under the id that is not a recorded verdict for this binding', async () => {
    const guardrail = counted('allow');
    for (const tampered of [{ garbage: true }, { v: 1, key: { runId: 'run-9' }, decision: {} }, 'allow']) {
      const journal: VerdictJournal = { read: async () => tampered as JsonValue, record: async (_id, entry) => entry };
      const { decision } = await judgeOnce(journal, BINDING, [guardrail], judgeWith([guardrail], BINDING));
      expect(decision.verdict).toMatchObject({ action: 'deny', outcome: 'failed' });
    }
    expect(guardrail.calls).toBe(0);
  });

  it('screens a recorded entry edited behind its back: an undeclared detection name, a decider not in the run', async () => {
    const guardrail = counted('deny');
    const entries = new Map<string, JsonValue>();
    const journal: VerdictJournal = { read: async (id) => entries.get(id), record: async (id, entry) => { entries.set(id, entry); return entry; } };
    await judgeOnce(journal, BINDING, [guardrail], judgeWith([guardrail], BINDING));
    const [[id, entry]] = [...entries] as [[string, { decision: { verdict: { detections: string[] }; by: string } }]];
    entry.decision.verdict.detections.push('card-4111111111111111');
    expect((await judgeOnce(journal, BINDING, [guardrail], judgeWith([guardrail], BINDING))).decision.verdict.detections).toEqual(['counted.hit', 'undeclared']);
    entry.decision.by = 'someone-else';
    entries.set(id, entry as unknown as JsonValue);
    expect((await judgeOnce(journal, BINDING, [guardrail], judgeWith([guardrail], BINDING))).decision.verdict.outcome).toBe('failed');
  });

  it('is a Mastra storage without a threadState domain: deny/failed, never an allow', async () => {
    // A storage whose adapter has no threadState domain (as an older adapter would).
    const storage = { getStore: async () => undefined } as unknown as MastraCompositeStore;
    const guardrail = counted('allow');
    const { decision } = await judgeOnce(createMastraVerdictJournal({ storage }), BINDING, [guardrail], judgeWith([guardrail], BINDING));
    expect(decision.verdict).toMatchObject({ action: 'deny', outcome: 'failed', reason: 'guardrail.journal-unavailable' });
  });

  it('refuses options it does not know, and a storage that is not one', () => {
    expect(() => createInMemoryVerdictJournal({ max: 1 } as never)).toThrow('unknown option "max"');
    expect(() => createMastraVerdictJournal({ storage: new InMemoryStore(), table: 'x' } as never)).toThrow('unknown option "table"');
    expect(() => createMastraVerdictJournal({ storage: {} as never })).toThrow('storage must be a Mastra storage');
  });
});

describe('check() with a journal', () => {
  it('reads both checks back on a resumed run; the guarded call itself runs again (it is not a recorded step)', async () => {
    const journal = createInMemoryVerdictJournal();
    const guardrail = counted('allow');
    let calls = 0;
    const run = () => check<string>('moderate', {
      guardrails: [guardrail], journal, context: { runId: 'run-1' },
      input: { placement: 'pre-prompt', value: 'question' },
      call: () => { calls += 1; return 'answer'; },
      output: (answer) => ({ placement: 'post-model', value: answer }),
    });
    await run();
    const audit = new AuditLogger();
    const resumed = await check<string>('moderate', {
      guardrails: [guardrail], journal, context: { runId: 'run-1' }, audit,
      input: { placement: 'pre-prompt', value: 'question' }, call: () => { calls += 1; return 'answer'; }, output: (answer) => ({ placement: 'post-model', value: answer }),
    });
    expect(guardrail.calls).toBe(2);
    expect(calls).toBe(2);
    expect(resumed).toMatchObject({ tripped: false, result: 'answer' });
    expect(audit.events().map((e) => e.detail?.['replayed'])).toEqual([true, true]);
  });

  it('fails a resumed run at the recorded halt without asking the guardrail again', async () => {
    const journal = createInMemoryVerdictJournal();
    const halting = counted('halt');
    const run = () => check('moderate', { guardrails: [halting], journal, context: { runId: 'run-1' }, input: { placement: 'pre-prompt', value: 'q' } });
    await expect(run()).rejects.toBeInstanceOf(GuardrailHaltError);
    await expect(run()).rejects.toBeInstanceOf(GuardrailHaltError);
    expect(halting.calls).toBe(1);
  });

  it('needs the run a verdict belongs to', async () => {
    await expect(check('x', { guardrails: [counted()], journal: createInMemoryVerdictJournal(), input: { placement: 'pre-prompt', value: 'q' } })).rejects.toThrow('journal needs context.runId');
  });
});

describe('a guarded agent with a verdict journal', () => {
  function agentWith(guardrail: Guardrail, journal: VerdictJournal, args: unknown) {
    const refunded: unknown[] = [];
    const refund = createTool({ id: 'refund', description: 'Refund', inputSchema: z.object({ amount: z.number() }), execute: async (input) => { refunded.push(input); return { ok: true }; } });
    const agent = createGuardedAgent({
      id: 'support', name: 'Support', instructions: 'x', allowedRoles: ['operator'], tools: { refund }, guardrails: [guardrail], verdictJournal: journal,
      model: scriptedModel({ steps: [{ toolCall: { toolName: 'refund', toolCallId: 'call-1', args } }, { text: 'done' }] }) as never,
    });
    return { agent, refunded };
  }
  const context = () => {
    const rc = new RequestContext();
    rc.set(ACTOR_CONTEXT_KEY, { id: 'user-1', role: 'operator' });
    rc.set(AGENT_AUDIT_CONTEXT_KEY, { tenant: 'acme', agentId: 'support', entryPath: 'test' });
    return rc;
  };

  it('reads a tool call\'s verdict back when the run is resumed under the same run id', async () => {
    const journal = createMastraVerdictJournal({ storage: new InMemoryStore() });
    const guardrail = counted('allow', 'counted', ['tool-args']);
    await agentWith(guardrail, journal, { amount: 10 }).agent.generate('go', { requestContext: context(), runId: 'run-7' });
    const resumed = agentWith(guardrail, journal, { amount: 10 });
    await resumed.agent.generate('go', { requestContext: context(), runId: 'run-7' });
    expect(guardrail.calls).toBe(1);
    expect(resumed.refunded).toEqual([{ amount: 10 }]);
    await agentWith(guardrail, journal, { amount: 10 }).agent.generate('go', { requestContext: context(), runId: 'run-8' });
    expect(guardrail.calls).toBe(2);
  });

  it('judges a resumed call with other arguments again: the recorded allow was for the old ones', async () => {
    const journal = createInMemoryVerdictJournal();
    const limit: Guardrail & { calls: number } = {
      name: 'limit', placements: ['tool-args'], calls: 0,
      check(input) { limit.calls += 1; return (input.value as { amount: number }).amount > 100 ? { action: 'deny', outcome: 'complete', detections: [] } : { action: 'allow', outcome: 'complete', detections: [] }; },
    };
    await agentWith(limit, journal, { amount: 10 }).agent.generate('go', { requestContext: context(), runId: 'run-7' });
    const attacker = agentWith(limit, journal, { amount: 10_000 });
    await attacker.agent.generate('go', { requestContext: context(), runId: 'run-7' });
    expect(limit.calls).toBe(2);
    expect(attacker.refunded).toEqual([]);
  });
});
