import { describe, expect, it } from '@jest/globals';
import fc from 'fast-check';
import { ACTOR_CONTEXT_KEY, createGuardedAgent, denyPatterns, normalizedView, piiSecrets } from '@gatehouse/guard';
import { RequestContext } from '@mastra/core/request-context';
import { createTool } from '@mastra/core/tools';
import { z } from 'zod';
import { fuzzSeed } from './support/fuzz-run.js';

// Issue 16, the content boundary as a property: whatever the model writes, however a provider
// cuts it into chunks, whatever look-alike letters it spells a forbidden phrase or a secret in,
// and whatever its tool calls carry in their arguments and results, no chunk a caller of a
// guarded stream receives holds forbidden content, on any channel. A real guarded agent (the
// real Mastra loop, the shipped policies) with a scripted model; no broker is needed.
//
// GATEHOUSE_CONTENT_FUZZ_RUNS lowers the number of cases locally (default 10,000);
// GATEHOUSE_FUZZ_SEED replays a run.

const RUNS = Number(process.env['GATEHOUSE_CONTENT_FUZZ_RUNS'] ?? 10_000);
const PHRASES = ['forbidden phrase', 'project nightingale'] as const;
// Filler never spells the start of a phrase or a secret, so any trace of one in what the caller
// got came from the forbidden item itself.
const FILLER = ['alpha', 'beta', 'gamma', 'order', 'ship', 'thanks', 'today', 'quiet', 'mild', '42', 'yes', 'ok.', 'well,'];
const TRACES = ['forbid', 'nighti', 'akia', 'eyjhbgci', 'begin rsa', 'begin private'];

const usage = { inputTokens: { total: 1, noCache: 1, cacheRead: 0, cacheWrite: 0 }, outputTokens: { total: 1, text: 1, reasoning: 0 } };

// Look-alike spellings, each folded back by the normalized view.
const FORMS: Readonly<Record<string, (s: string) => string>> = {
  plain: (s) => s,
  upper: (s) => s.toUpperCase(),
  fullwidth: (s) => [...s].map((c) => (c >= '!' && c <= '~' ? String.fromCharCode(c.charCodeAt(0) + 0xfee0) : c === ' ' ? '\u3000' : c)).join(''),
  mathBold: (s) => [...s].map((c) => (c >= 'a' && c <= 'z' ? String.fromCodePoint(0x1d41a + c.charCodeAt(0) - 97) : c >= 'A' && c <= 'Z' ? String.fromCodePoint(0x1d400 + c.charCodeAt(0) - 65) : c)).join(''),
  zeroWidth: (s) => [...s].join('\u200b'),
  marks: (s) => [...s].map((c) => (/[a-z]/i.test(c) ? `${c}\u0301` : c)).join(''),
  cyrillic: (s) => s.replace(/a/g, 'а').replace(/e/g, 'е').replace(/o/g, 'о').replace(/p/g, 'р').replace(/A/g, 'А').replace(/K/g, 'К'),
  spaced: (s) => s.replace(/ /g, '\n \t'),
};

interface Case {
  readonly text: string;
  /** Where the model cuts the text: code-unit lengths of its deltas (surrogate pairs may be split). */
  readonly cuts: readonly number[];
  readonly toolArgs: string | undefined;
  readonly toolResult: string | undefined;
  readonly toolFirst: boolean;
}

const secret = fc.oneof(
  fc.stringMatching(/^AKIA[A-Z0-9]{16}$/),
  fc.tuple(fc.stringMatching(/^[A-Za-z0-9_-]{8,20}$/), fc.stringMatching(/^[A-Za-z0-9_-]{8,30}$/)).map(([a, b]) => `eyJhbGciOiJIUzI1NiJ9.eyJ${a}.${b}`),
  fc.constant('-----BEGIN RSA PRIVATE KEY-----'),
);
const form = fc.constantFrom(...Object.keys(FORMS));
// A phrase in any form; a secret in any form that is still the secret once folded (upper case is
// another, harmless string for a case-sensitive token).
const forbidden: fc.Arbitrary<[string, string]> = fc.oneof(
  fc.tuple(fc.constantFrom(...PHRASES), form),
  fc.tuple(secret, form.filter((f) => f !== 'upper')),
);
const filler = fc.array(fc.constantFrom(...FILLER), { minLength: 0, maxLength: 12 }).map((words) => words.join(' '));

const caseOf: fc.Arbitrary<Case> = fc
  .record({
    before: filler,
    item: fc.option(forbidden, { nil: undefined }),
    after: filler,
    cuts: fc.array(fc.integer({ min: 1, max: 9 }), { minLength: 1, maxLength: 40 }),
    toolArgs: fc.option(forbidden, { nil: undefined }),
    toolResult: fc.option(forbidden, { nil: undefined }),
    withTool: fc.boolean(),
    toolFirst: fc.boolean(),
  })
  .map(({ before, item, after, cuts, toolArgs, toolResult, withTool, toolFirst }) => ({
    text: [before, item === undefined ? '' : FORMS[item[1]]!(item[0]), after].filter((p) => p.length > 0).join(' '),
    cuts,
    toolArgs: withTool ? (toolArgs === undefined ? 'order 42' : FORMS[toolArgs[1]]!(toolArgs[0])) : undefined,
    toolResult: withTool ? (toolResult === undefined ? 'shipped' : FORMS[toolResult[1]]!(toolResult[0])) : undefined,
    toolFirst,
  }));

function deltasOf(text: string, cuts: readonly number[]): string[] {
  const out: string[] = [];
  for (let at = 0, i = 0; at < text.length; i++) {
    const size = cuts[i % cuts.length]!;
    out.push(text.slice(at, at + size));
    at += size;
  }
  return out;
}

// One model for every case: it streams the current case's turns (a first turn with the text and
// maybe a tool call, then a short closing turn).
let current: Case | undefined;
let turn = 0;
const model = {
  specificationVersion: 'v3',
  provider: 'gatehouse-fuzz',
  modelId: 'content-boundary',
  supportedUrls: {},
  async doGenerate(): Promise<never> {
    throw new Error('stream only');
  },
  async doStream(): Promise<{ stream: ReadableStream<unknown> }> {
    const c = current!;
    const first = turn++ === 0;
    const parts: unknown[] = [{ type: 'stream-start', warnings: [] }];
    const text = first ? c.text : 'done';
    const textParts = text.length === 0 ? [] : [{ type: 'text-start', id: 't' }, ...deltasOf(text, c.cuts).map((delta) => ({ type: 'text-delta', id: 't', delta })), { type: 'text-end', id: 't' }];
    const calls = first && c.toolArgs !== undefined;
    const input = JSON.stringify({ key: c.toolArgs });
    const callParts = calls
      ? [{ type: 'tool-input-start', id: 'c1', toolName: 'lookup' }, ...deltasOf(input, c.cuts).map((delta) => ({ type: 'tool-input-delta', id: 'c1', delta })), { type: 'tool-input-end', id: 'c1' }, { type: 'tool-call', toolCallId: 'c1', toolName: 'lookup', input }]
      : [];
    parts.push(...(c.toolFirst ? [...callParts, ...textParts] : [...textParts, ...callParts]));
    parts.push({ type: 'finish', finishReason: calls ? { unified: 'tool-calls', raw: 'tool_calls' } : { unified: 'stop', raw: 'stop' }, usage });
    return {
      stream: new ReadableStream({
        start(controller) {
          for (const part of parts) controller.enqueue(part);
          controller.close();
        },
      }),
    };
  },
};

const lookup = createTool({ id: 'lookup', description: 'looks an order up', inputSchema: z.object({ key: z.string() }), execute: async () => ({ status: current?.toolResult }) });
const agent = createGuardedAgent({
  id: 'fuzzed',
  name: 'Fuzzed',
  instructions: 'Answer.',
  model: model as never,
  tools: { lookup },
  allowedRoles: ['operator'],
  maxSteps: 3,
  policies: [denyPatterns([...PHRASES]), piiSecrets({ detectors: ['awsAccessKey', 'jwt', 'privateKey'] })],
});
// The same policies, as a reader of what the caller got: it must find nothing.
const inspectors = [denyPatterns([...PHRASES]), piiSecrets({ detectors: ['awsAccessKey', 'jwt', 'privateKey'] })];
const inspect = (text: string) =>
  inspectors.every((p) => (p.evaluate(text, { phase: 'output', channel: 'answer', offset: 0, segmentLength: text.length, previousSegmentLength: 0, final: true, signal: new AbortController().signal }) as { allowed: boolean }).allowed);

function context(): RequestContext {
  const rc = new RequestContext();
  rc.set(ACTOR_CONTEXT_KEY, { id: 'fuzz', role: 'operator' });
  return rc;
}

describe('content boundary (property)', () => {
  it(`no chunk a caller receives holds forbidden content, on any channel (${RUNS.toLocaleString('en')} cases)`, async () => {
    const seed = fuzzSeed('content-boundary');
    let refused = 0;
    await fc.assert(
      fc.asyncProperty(caseOf, async (c) => {
        current = c;
        turn = 0;
        const stream = await agent.stream('go', { requestContext: context() });
        const reader = stream.fullStream.getReader();
        let text = '';
        const others: string[] = [];
        for (let next = await reader.read(); !next.done; next = await reader.read()) {
          const chunk = next.value as { type: string; payload?: { text?: unknown } };
          if (chunk.type === 'text-delta') text += String(chunk.payload?.text ?? '');
          else others.push(JSON.stringify(chunk));
        }
        const result = await stream.result();
        if (result.stopReason !== 'finished') refused += 1;
        // Every channel: the answer as shown, every other chunk, and the result, as written and folded.
        for (const seen of [text, ...others, result.text]) {
          const folded = normalizedView(seen).toLowerCase();
          if (!inspect(seen) || !inspect(normalizedView(seen)) || TRACES.some((trace) => folded.includes(trace))) {
            if (process.env['GATEHOUSE_CONTENT_FUZZ_DEBUG']) process.stdout.write(`leak: ${JSON.stringify(seen)}\n`);
            return false;
          }
        }
        return true;
      }),
      { numRuns: RUNS, seed, endOnFailure: true },
    );
    // The generator does produce refusals (a property that never refuses tests nothing).
    expect(refused).toBeGreaterThan(RUNS / 10);
  }, 1_800_000);
});
