// Benchmark: a guarded stream of 10,000 chunks against the same stream unguarded, in one
// run. Both use a real Mastra Agent and the scripted model; the guarded one runs the role
// gate, piiSecrets + denyPatterns with hold-back and an in-memory audit log.
import { Agent } from '@mastra/core/agent';
import { Mastra } from '@mastra/core/mastra';
import { RequestContext } from '@mastra/core/request-context';
import { recordBenchFigure } from '../../../../tools/bench-results.mjs';
import { createGuardedAgent } from '../agent/guarded-agent.js';
import { AuditLogger } from '../audit/audit-logger.js';
import { ACTOR_CONTEXT_KEY } from '../context.js';
import { denyPatterns } from '../policy-engine/policies/deny-patterns.js';
import { piiSecrets } from '../policy-engine/policies/pii-secrets.js';
import { collectStreamText, scriptedModel } from '../testing/scripted-model.js';

const CHUNKS = 10_000;
const ROUNDS = 5;

function chunks(): string[] {
  const words = ['the', 'account', 'balance', 'is', 'fine,', 'thanks', 'for', 'asking', 'about', 'order', '#1234.', 'Regards'];
  return Array.from({ length: CHUNKS }, (_, i) => `${words[i % words.length]} `);
}

async function timeStream(run: () => Promise<string>): Promise<{ ms: number; length: number }> {
  const start = process.hrtime.bigint();
  const text = await run();
  return { ms: Number(process.hrtime.bigint() - start) / 1e6, length: text.length };
}

const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)] ?? Number.NaN;

/** Prints the median time of each and the guarded/unguarded ratio. */
export async function benchAgentStream(): Promise<void> {
  const script = chunks();
  const expected = script.join('');
  const plain = new Agent({ id: 'plain', name: 'plain', instructions: 'x', model: scriptedModel({ chunks: script }) as never });
  new Mastra({ agents: { plain }, logger: false });
  const guarded = createGuardedAgent({
    id: 'guarded',
    name: 'guarded',
    instructions: 'x',
    model: scriptedModel({ chunks: script }) as never,
    allowedRoles: ['operator'],
    policies: [denyPatterns(['private signing key', 'internal use only']), piiSecrets()],
    audit: new AuditLogger(),
  });
  const requestContext = new RequestContext();
  requestContext.set(ACTOR_CONTEXT_KEY, { id: 'bench', role: 'operator' });

  const runPlain = async () => (await collectStreamText((await plain.stream('go')).fullStream as never)).text;
  const runGuarded = async () => (await collectStreamText((await guarded.stream('go', { requestContext })).fullStream as never)).text;

  // Warm-up, and a check that both deliver the whole text.
  for (const run of [runPlain, runGuarded]) {
    const text = await run();
    if (text !== expected) throw new Error('stream did not deliver the whole text');
  }
  const plainTimes: number[] = [];
  const guardedTimes: number[] = [];
  for (let i = 0; i < ROUNDS; i += 1) {
    plainTimes.push((await timeStream(runPlain)).ms);
    guardedTimes.push((await timeStream(runGuarded)).ms);
  }
  const p = median(plainTimes);
  const g = median(guardedTimes);
  recordBenchFigure({
    benchmark: 'guard: guarded agent stream',
    source: 'libs/guard/src/bench/agent-stream.bench.ts',
    case: `${CHUNKS.toLocaleString('en')} chunks, scripted model, median of ${ROUNDS}`,
    metric: 'time to stream the whole answer (role gate, piiSecrets + denyPatterns with hold-back, audit)',
    unit: 'ms',
    value: g,
    baseline: 'the same Mastra agent and stream, unguarded',
    baselineValue: p,
    target: { on: 'ratio', atMost: 1.5, source: 'issue 22: guarded stream ≤ 1.5x unguarded' },
  });
  console.log(
    `agent-stream: ${CHUNKS} chunks, median of ${ROUNDS}: unguarded ${p.toFixed(1)} ms, guarded ${g.toFixed(1)} ms, ratio ${(g / p).toFixed(2)}x (${((g - p) / CHUNKS * 1000).toFixed(1)} µs per chunk added)`,
  );
}
