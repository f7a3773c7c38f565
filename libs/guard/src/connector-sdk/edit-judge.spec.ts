import { describe, expect, it } from '@jest/globals';
import { judgeEdit, setEditJudge } from './edit-judge.js';

// The reviewer's-edit judgement a connector asks for, on each of its paths.

const accept = (value: unknown) => ({ success: true as const, data: value });
const numbersOnly = (value: unknown) => (typeof (value as { amount?: unknown }).amount === 'number' ? accept(value) : { success: false as const });

describe('judgeEdit', () => {
  it('runs the edit as the schema took it when no guarded agent set a judge', async () => {
    expect(await judgeEdit({}, { amount: 5 }, numbersOnly)).toEqual({ kind: 'run', input: { amount: 5 } });
    expect(await judgeEdit(undefined, { amount: 5 }, numbersOnly)).toEqual({ kind: 'run', input: { amount: 5 } });
  });

  it('runs what the judge allows, and checks a changed value against the schema again', async () => {
    const context = {};
    setEditJudge(context, async (edited) => ({ kind: 'run', input: edited }));
    expect(await judgeEdit(context, { amount: 5 }, numbersOnly)).toEqual({ kind: 'run', input: { amount: 5 } });
    setEditJudge(context, async () => ({ kind: 'run', input: { amount: 3 } }));
    expect(await judgeEdit(context, { amount: 5 }, numbersOnly)).toEqual({ kind: 'run', input: { amount: 3 } });
    setEditJudge(context, async () => ({ kind: 'run', input: { amount: 'three' } }));
    expect(await judgeEdit(context, { amount: 5 }, numbersOnly)).toEqual({ kind: 'invalid' });
  });

  it('refuses what the judge refuses, an edit that is not JSON, and a judge that throws', async () => {
    const context = {};
    let asked = 0;
    setEditJudge(context, async () => { asked += 1; return { kind: 'refused' }; });
    expect(await judgeEdit(context, { amount: 5 }, numbersOnly)).toEqual({ kind: 'refused' });
    expect(await judgeEdit(context, { amount: 5, at: new Date(0) }, accept)).toEqual({ kind: 'refused' });
    expect(asked).toBe(1);
    setEditJudge(context, async () => { throw new Error('classifier down'); });
    expect(await judgeEdit(context, { amount: 5 }, numbersOnly)).toEqual({ kind: 'refused' });
  });
});
