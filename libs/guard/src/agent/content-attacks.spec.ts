import { describe, expect, it } from '@jest/globals';
import { RequestContext } from '@mastra/core/request-context';
import { MockMemory } from '@mastra/core/memory';
import { type ChunkType } from '@mastra/core/stream';
import { createTool } from '@mastra/core/tools';
import { z } from 'zod';
import { createGuardedAgent, type GuardedAgentConfig } from '../agent/guarded-agent.js';
import { ACTOR_CONTEXT_KEY } from '../context.js';
import { normalizedView } from '../policy-engine/normalized-view.js';
import { denyPatterns } from '../policy-engine/policies/deny-patterns.js';
import { piiSecrets } from '../policy-engine/policies/pii-secrets.js';
import { type PolicyEvaluator } from '../policy-engine/types.js';

// Attacks on the content boundary (issue 16) with a model's powers only: every test states the
// boundary's promise, and each fails on main where the forbidden content gets through.

const SECRET = 'AKIAIOSFODNN7EXAMPLE';
const JWT = 'eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U';
const usage = { inputTokens: { total: 1, noCache: 1, cacheRead: 0, cacheWrite: 0 }, outputTokens: { total: 1, text: 1, reasoning: 0 } };
const STOP = { type: 'finish', finishReason: { unified: 'stop', raw: 'stop' }, usage };
const TOOLS = { type: 'finish', finishReason: { unified: 'tool-calls', raw: 'tool_calls' }, usage };
type Part = { type: string; [key: string]: unknown };

const text = (id: string, ...deltas: string[]): Part[] => [{ type: 'text-start', id }, ...deltas.map((delta) => ({ type: 'text-delta', id, delta })), { type: 'text-end', id }];
const reasoning = (id: string, ...deltas: string[]): Part[] => [{ type: 'reasoning-start', id }, ...deltas.map((delta) => ({ type: 'reasoning-delta', id, delta })), { type: 'reasoning-end', id }];
const call = (toolCallId: string, toolName: string, args: unknown): Part[] => {
  const input = JSON.stringify(args);
  return [{ type: 'tool-input-start', id: toolCallId, toolName }, { type: 'tool-input-delta', id: toolCallId, delta: input }, { type: 'tool-input-end', id: toolCallId }, { type: 'tool-call', toolCallId, toolName, input }];
};

/** A V3 model streaming (or, for generate(), answering with) `turns[i]` on its i-th call; the last repeats. */
function rawModel(turns: readonly (readonly Part[])[]) {
  let calls = 0;
  const next = () => turns[Math.min(calls++, turns.length - 1)]!;
  return {
    specificationVersion: 'v3', provider: 'attack', modelId: 'raw', supportedUrls: {},
    async doStream() {
      const parts = [{ type: 'stream-start', warnings: [] }, ...next()];
      return { stream: new ReadableStream({ start: (c) => { for (const p of parts) c.enqueue(p); c.close(); } }) };
    },
    async doGenerate() {
      const content: { type: string; text?: string; [key: string]: unknown }[] = [];
      const open = new Map<string, { type: string; text: string }>();
      let finishReason: unknown = STOP.finishReason;
      for (const p of next()) {
        if (p.type === 'text-start' || p.type === 'reasoning-start') {
          const block = { type: p.type === 'text-start' ? 'text' : 'reasoning', text: '' };
          open.set(`${p.type[0]}${String(p['id'])}`, block);
          content.push(block);
        } else if (p.type === 'text-delta' || p.type === 'reasoning-delta') open.get(`${p.type[0]}${String(p['id'])}`)!.text += String(p['delta']);
        else if (p.type === 'tool-call') content.push({ type: 'tool-call', toolCallId: p['toolCallId'], toolName: p['toolName'], input: p['input'] });
        else if (p.type === 'finish') finishReason = p['finishReason'];
      }
      return { content, finishReason, usage, warnings: [] };
    },
  };
}

function context(): RequestContext {
  const rc = new RequestContext();
  rc.set(ACTOR_CONTEXT_KEY, { id: 'user-1', role: 'operator' });
  return rc;
}

function guarded(turns: readonly (readonly Part[])[], extra: Partial<GuardedAgentConfig> = {}) {
  const runs = { count: 0 };
  const lookup = createTool({ id: 'lookup', description: 'looks up', inputSchema: z.object({ key: z.string() }), execute: async () => { runs.count += 1; return { ok: true }; } });
  const agent = createGuardedAgent({
    id: 'a', name: 'A', instructions: 'x', model: rawModel(turns) as never, tools: { lookup }, allowedRoles: ['operator'], maxSteps: 3,
    policies: [denyPatterns(['forbidden phrase']), piiSecrets({ detectors: ['awsAccessKey', 'jwt', 'privateKey'] })],
    ...extra,
  });
  return { agent, runs };
}

async function streamed(agent: ReturnType<typeof guarded>['agent']) {
  const s = await agent.stream('go', { requestContext: context() });
  const chunks: ChunkType[] = [];
  const reader = s.fullStream.getReader();
  for (let n = await reader.read(); !n.done; n = await reader.read()) chunks.push(n.value);
  const shown = chunks.filter((c) => c.type === 'text-delta').map((c) => (c.payload as { text: string }).text).join('');
  return { chunks, shown, result: s.result() };
}

describe('content boundary attacks: text the caller reads whole, judged in pieces', () => {
  it('a phrase split across two text blocks of one step is not streamed to the caller', async () => {
    const { shown } = await streamed(guarded([[...text('t1', 'the forbidden'), ...text('t2', ' phrase'), STOP]]).agent);
    expect(shown).not.toContain('forbidden phrase');
  });

  it('a key split across two text blocks of one step is not streamed to the caller', async () => {
    const { shown } = await streamed(guarded([[...text('t1', 'AKIAIOSFOD'), ...text('t2', 'NN7EXAMPLE'), STOP]]).agent);
    expect(shown).not.toContain(SECRET);
  });

  it('a key split across the text of two steps is neither streamed nor in generate()', async () => {
    const turns = [[...text('t', 'AKIAIOSFOD'), ...call('c1', 'lookup', { key: 'x' }), TOOLS], [...text('t', 'NN7EXAMPLE'), STOP]];
    const { shown } = await streamed(guarded(turns).agent);
    expect(shown).not.toContain(SECRET);
    const result = await guarded(turns).agent.generate('go', { requestContext: context() });
    expect(result.text).not.toContain(SECRET);
  });
});

describe('content boundary attacks: the normalized view joins what the source keeps apart', () => {
  // Raw text, each one a whole key or JWT that piiSecrets denies when it reads the source; the view
  // folds or drops the neighbour into a letter or digit and the detectors' boundaries fail.
  const forms: Readonly<Record<string, string>> = {
    'an accented letter before the key': `é${SECRET}`,
    'a Cyrillic letter before the key': `к${SECRET}`,
    'a zero-width space between a word and the key': `key\u200b${SECRET}`,
    'a superscript digit after the key': `${SECRET}¹`,
    'a zero-width space before a JWT': `a\u200b${JWT}`,
  };
  for (const [name, written] of Object.entries(forms)) {
    it(`denies ${name} in generate() and on the stream`, async () => {
      const turns = [[...text('t', written, ' ok'), STOP]];
      const generated = await guarded(turns).agent.generate('go', { requestContext: context() });
      expect(generated.stopReason).toBe('tripwire');
      const { shown, result } = await streamed(guarded(turns).agent);
      expect(shown).not.toContain(SECRET);
      expect(shown).not.toContain(JWT);
      expect((await result).stopReason).toBe('tripwire');
    });
  }
});

describe('content boundary attacks: invisible and look-alike characters the view keeps', () => {
  // Default-ignorable code points render as nothing (Unicode says so even while unassigned); the
  // Hangul filler and the braille blank render as a blank, yet are not whitespace.
  it.each([
    ['U+2065 (default ignorable, unassigned)', 'forbidden phr\u2065ase'],
    ['U+FFF0 (default ignorable, unassigned)', 'forbidden phr\uFFF0ase'],
    ['U+E0002 (tag block, unassigned)', 'forbidden phr\u{E0002}ase'],
    ['U+3164 Hangul filler between the words', 'forbidden\u3164phrase'],
    ['U+2800 braille blank between the words', 'forbidden\u2800phrase'],
    ['Cherokee small letter o', 'f\uAB8Erbidden phrase'],
  ])('denies the phrase written with %s', async (_name, written) => {
    const { shown, result } = await streamed(guarded([[...text('t', written), STOP]]).agent);
    expect(shown).not.toContain(written);
    expect((await result).stopReason).toBe('tripwire');
  });

  it('shows no right-to-left override, which would make a phrase written backwards read forwards', async () => {
    const { shown } = await streamed(guarded([[...text('t', 'forbidden \u202Eesarhp\u202C'), STOP]]).agent);
    expect(shown).not.toMatch(/[\u202D\u202E]/);
  });

  it('folds Lisu capitals and the lunate sigma like the other confusables', () => {
    expect(normalizedView('\uA4EE\uA4D7\uA4F2\uA4EE')).toBe('AKIA');
    expect(normalizedView('\u03F2')).toBe('c');
  });
});

describe('content boundary attacks: model-written identifiers and errors', () => {
  it('shows no model-written block id, tool call id or response id unjudged', async () => {
    const turns = [[{ type: 'response-metadata', id: SECRET, modelId: SECRET }, ...text(SECRET, 'hello'), ...call(SECRET, 'lookup', { key: 'x' }), TOOLS], [...text('z', 'done'), STOP]];
    const { chunks } = await streamed(guarded(turns).agent);
    expect(JSON.stringify(chunks)).not.toContain(SECRET);
  });

  it('shows no model-written tool name unjudged', async () => {
    const { chunks } = await streamed(guarded([[...call('c1', SECRET, { key: 'x' }), TOOLS], [...text('z', 'done'), STOP]]).agent);
    expect(JSON.stringify(chunks)).not.toContain(SECRET);
  });

  it("shows neither a stream error's name nor, from result(), its message", async () => {
    const { chunks, result } = await streamed(guarded([[...text('t', 'hi '), { type: 'error', error: { name: SECRET, message: SECRET } }, STOP]]).agent);
    expect(JSON.stringify(chunks)).not.toContain(SECRET);
    const settled = await result.then((r) => JSON.stringify(r), (e: Error) => `${e.name}: ${e.message}`);
    expect(settled).not.toContain(SECRET);
  });
});

describe('content boundary attacks: a tool runs in a step whose reasoning is refused', () => {
  const turns = [[...reasoning('r', 'the forbidden phrase'), ...call('c1', 'lookup', { key: 'x' }), TOOLS], [...text('t', 'done'), STOP]];

  it('generate(): the tool never runs', async () => {
    const { agent, runs } = guarded(turns);
    const result = await agent.generate('go', { requestContext: context() });
    expect(result.stopReason).toBe('tripwire');
    expect(runs.count).toBe(0);
  });

  it('stream(), with a reasoning policy that answers asynchronously: the tool never runs', async () => {
    const slow: PolicyEvaluator = {
      name: 'slow-reasoning', phases: ['output'], channels: ['reasoning'],
      evaluate: async (t) => {
        await new Promise((resolve) => setTimeout(resolve, 40));
        return t.includes('forbidden') ? { allowed: false, detections: ['slow'] } : { allowed: true };
      },
    };
    const { agent, runs } = guarded(turns, { policies: [denyPatterns(['unrelated']), slow] });
    const { result } = await streamed(agent);
    expect((await result).stopReason).toBe('tripwire');
    expect(runs.count).toBe(0);
  });
});

describe('content boundary attacks: two blocks of a channel written at once', () => {
  // A caller that groups deltas by block (a chat UI does) reads each block whole: judged in
  // arrival order, `the forbidden` + `xx` + ` phrase` passed while block 1 read the phrase.
  const interleaved = (a: string, filler: string, b: string): Part[] => [
    { type: 'text-start', id: 't1' }, { type: 'text-start', id: 't2' },
    { type: 'text-delta', id: 't1', delta: a }, { type: 'text-delta', id: 't2', delta: filler },
    { type: 'text-delta', id: 't1', delta: b }, { type: 'text-end', id: 't1' }, { type: 'text-end', id: 't2' },
  ];
  const byBlock = (chunks: readonly ChunkType[]) => {
    const blocks = new Map<string, string>();
    for (const c of chunks) if (c.type === 'text-delta') {
      const p = c.payload as { id: string; text: string };
      blocks.set(p.id, (blocks.get(p.id) ?? '') + p.text);
    }
    return [...blocks.values()].join('|');
  };

  it.each([
    ['a phrase', interleaved('the forbidden', 'xx', ' phrase'), 'forbidden phrase'],
    ['a key', interleaved('AKIAIOSFOD', ' ', 'NN7EXAMPLE'), SECRET],
  ])('no block shows %s written across another block', async (_name, parts, forbidden) => {
    const { chunks, result } = await streamed(guarded([[...parts, STOP]]).agent);
    expect(byBlock(chunks)).not.toContain(forbidden);
    expect((await result).stopReason).toBe('tripwire');
  });

  it('with memory too', async () => {
    const memory = new MockMemory({ options: { lastMessages: 10, generateTitle: false } });
    const s = await guarded([[...interleaved('the forbidden', 'xx', ' phrase'), STOP]], { memory: memory as never }).agent.stream('go', { requestContext: context(), memory: { thread: 'th', resource: 'user-1' } });
    const chunks: ChunkType[] = [];
    for await (const c of s.fullStream) chunks.push(c);
    expect(byBlock(chunks)).not.toContain('forbidden phrase');
    expect((await s.result()).stopReason).toBe('tripwire');
  });

  it('no tool runs in a step whose blocks were written at once', async () => {
    const { agent, runs } = guarded([[...interleaved('the forbidden', 'xx', ' phrase'), ...call('c1', 'lookup', { key: 'x' }), TOOLS], [...text('z', 'done'), STOP]]);
    await (await streamed(agent)).result;
    expect(runs.count).toBe(0);
  });
});

describe('content boundary attacks: model-written fields of a step end', () => {
  it('shows no raw finish reason or raw usage, and a finish reason only from the known set', async () => {
    const finish = { type: 'finish', finishReason: { unified: 'forbidden phrase', raw: SECRET }, usage: { ...usage, raw: { note: 'forbidden phrase' } } };
    const { chunks, result } = await streamed(guarded([[...text('t', 'hi'), finish]]).agent);
    const json = JSON.stringify(chunks);
    expect(json).not.toContain(SECRET);
    expect(json).not.toContain('forbidden phrase');
    expect(JSON.stringify(await result)).not.toContain('forbidden');
  });

  it('releases many tiny blocks one after another, each whole and in order', async () => {
    const parts: Part[] = [];
    for (let i = 0; i < 400; i++) parts.push(...text(`b${i}`, String.fromCharCode(97 + (i % 26))));
    const { shown, result } = await streamed(guarded([[...parts, STOP]]).agent);
    expect(shown).toBe(Array.from({ length: 400 }, (_, i) => String.fromCharCode(97 + (i % 26))).join(''));
    expect((await result).stopReason).toBe('finished');
  });
});
