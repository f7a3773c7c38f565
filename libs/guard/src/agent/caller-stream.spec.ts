import { describe, expect, it } from '@jest/globals';
import { RequestContext } from '@mastra/core/request-context';
import { type ChunkType } from '@mastra/core/stream';
import { createTool } from '@mastra/core/tools';
import { z } from 'zod';
import { AuditLogger } from '../audit/audit-logger.js';
import { ACTOR_CONTEXT_KEY } from '../context.js';
import { denyPatterns } from '../policy-engine/policies/deny-patterns.js';
import { piiSecrets } from '../policy-engine/policies/pii-secrets.js';
import { scriptedModel, type ScriptedStreamPart } from '../testing/scripted-model.js';
import { callerView } from './caller-stream.js';
import { callerStreams } from './caller-streams.js';
import { createGuardedAgent } from './guarded-agent.js';
import { StepGate } from './step-gate.js';

// What a caller of a guarded stream can read, chunk by chunk: model-written tool arguments and
// tool results carry secrets as often as text does, and the step and finish chunks repeat them.

const SECRET = 'AKIAIOSFODNN7EXAMPLE';
const RESULT_SECRET = 'AKIAJSECRETRESULT7XY';

function context(): RequestContext {
  const rc = new RequestContext();
  rc.set(ACTOR_CONTEXT_KEY, { id: 'user-1', role: 'operator' });
  return rc;
}

async function readAll(stream: ReadableStream<ChunkType>): Promise<ChunkType[]> {
  const chunks: ChunkType[] = [];
  const reader = stream.getReader();
  for (let next = await reader.read(); !next.done; next = await reader.read()) chunks.push(next.value);
  return chunks;
}

const payloadOf = (chunks: readonly ChunkType[], type: string): unknown => (chunks.find((c) => c.type === type) as { payload?: unknown } | undefined)?.payload;

function agentWith(turns: readonly (readonly ScriptedStreamPart[])[], result: unknown = { status: 'ok' }) {
  const lookup = createTool({ id: 'lookup', description: 'looks up', inputSchema: z.object({ key: z.string() }), execute: async () => result });
  const audit = new AuditLogger();
  const agent = createGuardedAgent({
    id: 'support',
    name: 'Support',
    instructions: 'x',
    model: scriptedModel({ streamSteps: turns }) as never,
    tools: { lookup },
    allowedRoles: ['operator'],
    policies: [piiSecrets({ detectors: ['awsAccessKey'] }), denyPatterns(['forbidden phrase'])],
    audit,
  });
  return { agent, audit };
}

describe('caller stream: tool content is judged before the caller sees it', () => {
  it('withholds model-written tool arguments that carry a secret, in deltas, the call, the result and the step ends', async () => {
    const call = { toolName: 'lookup', toolCallId: 'c1', args: { key: SECRET } };
    const { agent, audit } = agentWith([[{ call, argDeltas: ['{"key":"AKIA', 'IOSFODNN7', 'EXAMPLE"}'] }], [{ text: ['Looked it up.'] }]]);
    const stream = await agent.stream('look it up', { requestContext: context() });
    const chunks = await readAll(stream.fullStream);
    expect(JSON.stringify(chunks)).not.toMatch(/AKIA|IOSFODNN7/);
    expect(chunks.map((c) => c.type)).not.toContain('tool-call-delta');
    expect(payloadOf(chunks, "tool-call")).toEqual({ toolCallId: 'call-1', toolName: 'lookup', withheld: true });
    // The final output, which holds the model's tool call, is judged whole as well: the turn ends refused.
    expect(await stream.result()).toMatchObject({ text: '', tripwire: { code: 'POLICY.DENIED' } });
    expect(audit.events().find((e) => e.action === 'agent.stream.tool-content')).toMatchObject({ decision: 'denied', detections: ['awsAccessKey'] });
    expect(JSON.stringify(audit.events())).not.toContain(SECRET);
  });

  it('withholds a tool result that carries a secret, and shows one that does not', async () => {
    const call = { toolName: 'lookup', toolCallId: 'c1', args: { key: 'order-7' } };
    const leaky = agentWith([[{ call }], [{ text: ['Done.'] }]], { token: RESULT_SECRET });
    const chunks = await readAll((await leaky.agent.stream('go', { requestContext: context() })).fullStream);
    expect(JSON.stringify(chunks)).not.toContain(RESULT_SECRET);
    expect(payloadOf(chunks, "tool-result")).toEqual({ toolCallId: 'call-1', toolName: 'lookup', withheld: true });
    expect(payloadOf(chunks, "tool-call")).toEqual({ toolCallId: 'call-1', toolName: 'lookup', args: { key: 'order-7' } });

    const clean = agentWith([[{ call }], [{ text: ['Done.'] }]], { status: 'shipped' });
    const shown = await readAll((await clean.agent.stream('go', { requestContext: context() })).fullStream);
    expect(payloadOf(shown, "tool-result")).toEqual({ toolCallId: 'call-1', toolName: 'lookup', result: { status: 'shipped' } });
  });

  it('keeps nothing of the answer, the steps or the messages in step-start, step-finish and finish', async () => {
    const call = { toolName: 'lookup', toolCallId: 'c1', args: { key: 'order-7' } };
    const { agent } = agentWith([[{ text: ['Checking order-7 now.'] }, { call }], [{ text: ['It shipped.'] }]], { status: 'shipped' });
    const chunks = await readAll((await agent.stream('where is order-7', { requestContext: context() })).fullStream);
    for (const chunk of chunks.filter((c) => ['step-start', 'step-finish', 'finish'].includes(c.type))) {
      const text = JSON.stringify((chunk as { payload?: unknown }).payload);
      for (const repeated of ['Checking', 'shipped', 'where is', 'order-7', 'toolCalls', 'messages', 'request', 'steps']) expect(text).not.toContain(repeated);
    }
    expect(payloadOf(chunks, "finish")).toMatchObject({ stepResult: { reason: 'stop' }, output: { usage: expect.any(Object) } });
  });

  it('a turn refused with empty text shows nothing the model wrote, on any channel', async () => {
    const call = { toolName: 'lookup', toolCallId: 'c1', args: { key: SECRET } };
    const { agent } = agentWith([[{ call }, { text: ['The forbidden ', 'phrase'] }], [{ text: ['unreached'] }]]);
    const stream = await agent.stream('go', { requestContext: context() });
    const chunks = await readAll(stream.fullStream);
    const result = await stream.result();
    expect(result).toMatchObject({ text: '', stopReason: 'tripwire' });
    expect(JSON.stringify(chunks)).not.toMatch(/AKIA|forbidden|unreached/);
    expect(chunks.at(-1)?.type).toBe('tripwire');
  });
});

describe('callerView on chunk shapes a scripted agent does not produce', () => {
  const c = (type: string, payload: Record<string, unknown>): ChunkType => ({ type, runId: 'r', from: 'AGENT', payload }) as unknown as ChunkType;
  const view = (chunks: ChunkType[], judgeShown = async () => ({ shown: false as const })) =>
    readAll(
      callerView(
        new ReadableStream<ChunkType>({
          start(controller) {
            for (const chunk of chunks) controller.enqueue(chunk);
            controller.close();
          },
        }),
        { gate: new StepGate(), judgeShown, stop: () => undefined },
      ),
    );

  it('drops raw provider bytes, sources, files, nested tool output and types it does not know', async () => {
    const out = await view([
      c('raw', { rawValue: SECRET }),
      c('source', { url: `https://x/${SECRET}` }),
      c('file', { data: SECRET }),
      c('tool-output', { output: SECRET }),
      c('data-progress', { value: SECRET }),
      c('some-future-chunk', { value: SECRET }),
      c('text-delta', { id: 't', text: 'ok' }),
    ]);
    expect(out.map((x) => x.type)).toEqual(['text-delta']);
  });

  it('shows neither the name nor the message of an error, which a provider or a tool may choose', async () => {
    const out = await view([c('error', { error: new TypeError(`bad key ${SECRET}`) })]);
    expect(out).toEqual([expect.objectContaining({ type: 'error', payload: { error: { name: 'Error', message: 'The agent run failed' } } })]);
  });

  it('withholds what cannot be judged as JSON, and the arguments of a tool error', async () => {
    const out = await view([c('tool-error', { toolCallId: 't', toolName: 'x', args: { key: SECRET }, error: SECRET }), c('tool-call-approval', { toolCallId: 't', toolName: 'x', args: { key: SECRET } })]);
    expect(JSON.stringify(out)).not.toContain(SECRET);
    // Ids of the call's own, the same for the same original; a tool name the agent does not have is not shown.
    expect((out[1] as { payload?: unknown } | undefined)?.payload).toEqual({ toolCallId: 'call-1', toolName: 'unknown', withheld: true });
  });

  it('ends the stream with a tripwire once the step gate refused a step', async () => {
    const gate = new StepGate();
    gate.refuse({ code: 'POLICY.DENIED', reason: 'Content blocked by policy "p" (output)' });
    const out = await readAll(
      callerView(
        new ReadableStream<ChunkType>({
          start(controller) {
            controller.enqueue(c('tool-result', { toolCallId: 't', result: { valid: false } }));
            controller.enqueue(c('step-finish', {}));
            controller.close();
          },
        }),
        { gate, judgeShown: async () => ({ shown: false }), stop: () => undefined },
      ),
    );
    expect(out).toEqual([expect.objectContaining({ type: 'tripwire', payload: { reason: 'Content blocked by policy "p" (output)', processorId: 'gatehouse-step-gate', metadata: { code: 'POLICY.DENIED' } } })]);
  });
});

describe('callerStreams', () => {
  it("fails the caller's streams with the run's static error, never the source's", async () => {
    const { fullStream, textStream, sink } = callerStreams(() => new Error('The agent run failed'));
    sink.chunk({ type: 'text-delta', runId: 'r', from: 'AGENT', payload: { id: 'b-1', text: 'hi' } } as unknown as ChunkType);
    sink.error(new Error(`provider said ${SECRET}`));
    const reader = fullStream.getReader();
    expect((await reader.read()).value).toMatchObject({ type: 'text-delta' });
    await expect(reader.read()).rejects.toThrow('The agent run failed');
    const text = textStream.getReader();
    expect((await text.read()).value).toBe('hi');
    await expect(text.read()).rejects.toThrow(/^The agent run failed$/);
  });
});
