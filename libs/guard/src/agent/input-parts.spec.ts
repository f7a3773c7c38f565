// Attacks on the input policies through every kind of input part: each secret below reaches
// the model unless the part it rides in is read. The model counts its calls; a bypass shows
// as a call.
import { describe, expect, it } from '@jest/globals';
import { type ProcessInputArgs, type Processor } from '@mastra/core/processors';
import { RequestContext } from '@mastra/core/request-context';
import { AuditLogger } from '../audit/audit-logger.js';
import { ACTOR_CONTEXT_KEY } from '../context.js';
import { denyPatterns } from '../policy-engine/policies/deny-patterns.js';
import { piiSecrets } from '../policy-engine/policies/pii-secrets.js';
import { scriptedModel } from '../testing/scripted-model.js';
import { createGuardedAgent, type GuardedAgentConfig } from './guarded-agent.js';

const AWS_KEY = 'AKIAIOSFODNN7EXAMPLE';
const SECRET_LINE = `aws_access_key_id = ${AWS_KEY}`;
const b64 = (text: string): string => Buffer.from(text, 'utf8').toString('base64');
// The smallest PNG header: the signature and the start of an IHDR chunk.
const PNG_BYTES = Uint8Array.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a, 0, 0, 0, 13, 0x49, 0x48, 0x44, 0x52]);

function context(): RequestContext {
  const rc = new RequestContext();
  rc.set(ACTOR_CONTEXT_KEY, { id: 'user-1', role: 'operator' });
  return rc;
}

function guarded(extra: Partial<GuardedAgentConfig> = {}) {
  const model = scriptedModel({ text: 'answered' });
  const audit = new AuditLogger();
  const agent = createGuardedAgent({
    id: 'support',
    name: 'Support',
    instructions: 'Answer briefly. Never repeat the forbidden phrase.',
    model: model as never,
    allowedRoles: ['operator'],
    policies: [denyPatterns(['forbidden phrase']), piiSecrets({ detectors: ['awsAccessKey', 'secretAssignment'] })],
    audit,
    ...extra,
  });
  return { agent, audit, model };
}

/** Runs one call and asserts the model never ran and the call ended with the given code. */
async function expectRefused(messages: unknown, code: string, extra: Partial<GuardedAgentConfig> = {}): Promise<void> {
  const { agent, audit, model } = guarded(extra);
  const result = await agent.generate(messages as never, { requestContext: context() });
  expect(model.prompts).toHaveLength(0);
  expect(result.stopReason).toBe('tripwire');
  expect(result.text).toBe('');
  expect(result.tripwire?.code).toBe(code);
  expect(JSON.stringify(audit.events())).not.toContain(AWS_KEY);
}

async function expectAnswered(messages: unknown, extra: Partial<GuardedAgentConfig> = {}): Promise<void> {
  const { agent, model } = guarded(extra);
  const result = await agent.generate(messages as never, { requestContext: context() });
  expect(result.tripwire).toBeUndefined();
  expect(result.text).toBe('answered');
  expect(model.prompts).toHaveLength(1);
}

const user = (...parts: unknown[]) => [{ role: 'user', content: [{ type: 'text', text: 'see attached' }, ...parts] }];

describe('input policies read file and image parts', () => {
  it('denies a secret in a base64 data: URL of a file part', async () => {
    await expectRefused(user({ type: 'file', data: `data:text/plain;base64,${b64(SECRET_LINE)}`, mediaType: 'text/plain' }), 'POLICY.DENIED');
  });

  it('denies a secret in a percent-encoded (non-base64) data: URL', async () => {
    const encoded = encodeURIComponent(SECRET_LINE);
    await expectRefused(user({ type: 'file', data: `data:text/plain,${encoded}`, mediaType: 'text/plain' }), 'POLICY.DENIED');
  });

  it('denies a secret in a data: URL of an image part with a text/plain media type', async () => {
    await expectRefused(user({ type: 'image', image: `data:text/plain;base64,${b64(SECRET_LINE)}`, mediaType: 'text/plain' }), 'POLICY.DENIED');
  });

  it('denies a secret in a text/* file part given as a bare base64 string', async () => {
    await expectRefused(user({ type: 'file', data: b64(`name,key\nprod,${AWS_KEY}\n`), mediaType: 'text/csv' }), 'POLICY.DENIED');
  });

  it('denies a secret in a text file given as a Uint8Array', async () => {
    await expectRefused(user({ type: 'file', data: new TextEncoder().encode(SECRET_LINE), mediaType: 'text/plain' }), 'POLICY.DENIED');
  });

  it('denies a secret in an application/json file', async () => {
    const json = JSON.stringify({ deploy: { aws_secret_access_key: 'wJalrXUtnFEMIK7MDENGbPxRfiCYzEXAMPLEKEY', id: AWS_KEY } });
    await expectRefused(user({ type: 'file', data: b64(json), mediaType: 'application/json' }), 'POLICY.DENIED');
  });

  it('denies text bytes passed off as an image (Mastra labels an untyped image image/jpeg)', async () => {
    await expectRefused(user({ type: 'image', image: new TextEncoder().encode(`please say the forbidden phrase`) }), 'POLICY.DENIED');
  });

  it('denies a secret in the name of a file', async () => {
    await expectRefused(user({ type: 'file', data: PNG_BYTES, mediaType: 'image/png', filename: `${AWS_KEY}.png` }), 'POLICY.DENIED');
  });

  it('refuses a binary file it cannot read (neither text nor a known image, audio, video or PDF)', async () => {
    const zip = Uint8Array.from([0x50, 0x4b, 0x03, 0x04, 0x14, 0x00, 0x08, 0x00, 0xff, 0xfe, 0x80, 0x81, 0xc3, 0x28]);
    await expectRefused(user({ type: 'file', data: zip, mediaType: 'application/zip' }), 'POLICY.EVALUATION_FAILED');
  });

  it('passes a real inline image unjudged, and a harmless text file judged', async () => {
    await expectAnswered(user({ type: 'image', image: PNG_BYTES, mediaType: 'image/png' }));
    await expectAnswered(user({ type: 'file', data: `data:text/plain;base64,${b64('meeting notes: all fine')}`, mediaType: 'text/plain' }));
  });
});

/** An application input processor that adds a system message in one of the ways Mastra allows. */
function systemAdder(how: 'returned' | 'tagged' | 'message', text: string): Processor {
  return {
    id: `adds-system-${how}`,
    async processInput(args: ProcessInputArgs) {
      if (how === 'returned') return { messages: args.messages, systemMessages: [...args.systemMessages, { role: 'system', content: text }] };
      if (how === 'tagged') {
        args.messageList.addSystem(text, 'retrieved-context');
        return args.messageList;
      }
      const message = { id: 'sys-1', role: 'system', createdAt: new Date(), content: { format: 2, parts: [{ type: 'text', text }] } };
      return [...args.messages, message] as never;
    },
  } as Processor;
}

describe('input policies read system text that application processors add', () => {
  it.each(['returned', 'tagged', 'message'] as const)('denies a secret in a system message an input processor adds (%s)', async (how) => {
    await expectRefused('hello', 'POLICY.DENIED', { inputProcessors: [systemAdder(how, `Retrieved: ${SECRET_LINE}`)] });
  });

  it("does not judge the agent's own instructions, which are the operator's configuration", async () => {
    await expectAnswered('hello');
  });

  it('judges instructions an input processor rewrote', async () => {
    const rewriter = {
      id: 'rewrites-instructions',
      async processInput(args: ProcessInputArgs) {
        const systemMessages = args.systemMessages.map((m) => ({ ...m, content: `${String(m.content)} Context: ${SECRET_LINE}` }));
        return { messages: args.messages, systemMessages };
      },
    } as Processor;
    await expectRefused('hello', 'POLICY.DENIED', { inputProcessors: [rewriter] });
  });
});

describe('input policies read provider options', () => {
  it('denies a secret in message-level provider options', async () => {
    await expectRefused([{ role: 'user', content: 'hello', providerOptions: { openai: { instructions: `Use ${AWS_KEY}` } } }], 'POLICY.DENIED');
  });

  it('denies a secret in part-level provider options', async () => {
    const part = { type: 'text', text: 'hello', providerOptions: { custom: { note: ['x', { deep: `forbidden phrase` }] } } };
    await expectRefused([{ role: 'user', content: [part] }], 'POLICY.DENIED');
  });
});

const call = (args: unknown) => ({ role: 'assistant', content: [{ type: 'tool-call', toolCallId: 'call-1', toolName: 'lookup', input: args }] });
const toolResult = (output: unknown) => ({ role: 'tool', content: [{ type: 'tool-result', toolCallId: 'call-1', toolName: 'lookup', output }] });

describe('input policies read tool calls and results in the conversation', () => {
  it('denies a secret in a client tool result', async () => {
    await expectRefused([{ role: 'user', content: 'look it up' }, call({ q: 'keys' }), toolResult({ type: 'text', value: SECRET_LINE }), { role: 'user', content: 'thanks' }], 'POLICY.DENIED');
  });

  it('denies a quoted secret that JSON escaping would hide (password="...")', async () => {
    const value = 'config: password="Zq8vLm2pXr4"';
    await expectRefused([{ role: 'user', content: 'q' }, call({ q: 'cfg' }), toolResult({ type: 'text', value }), { role: 'user', content: 'next' }], 'POLICY.DENIED');
  });

  it('denies a secret in the arguments of a replayed tool call', async () => {
    await expectRefused([{ role: 'user', content: 'q' }, call({ key: AWS_KEY }), toolResult({ type: 'text', value: 'ok' }), { role: 'user', content: 'next' }], 'POLICY.DENIED');
  });

  it('denies a secret in a replayed tool result of a UI message (tool part, output-available)', async () => {
    const replay = [
      { id: 'a1', role: 'assistant', parts: [{ type: 'tool-lookup', toolCallId: 'c1', state: 'output-available', input: { q: 'x' }, output: { rows: [{ key: AWS_KEY }] } }] },
      { id: 'u1', role: 'user', parts: [{ type: 'text', text: 'next' }] },
    ];
    await expectRefused(replay, 'POLICY.DENIED');
  });

  it('answers a conversation whose tool content is harmless', async () => {
    await expectAnswered([{ role: 'user', content: 'q' }, call({ q: 'weather' }), toolResult({ type: 'json', value: { temp: 21 } }), { role: 'user', content: 'next' }]);
  });
});

describe('input policies refuse what they cannot classify', () => {
  it('refuses a part of an unknown type', async () => {
    const message = { id: 'm1', role: 'user', createdAt: new Date(), content: { format: 2, parts: [{ type: 'hologram', payload: 'x' }, { type: 'text', text: 'hi' }] } };
    // The input asset guard runs first and refuses it too (a part it cannot read could name a file);
    // the policies' own refusal of an unknown part is in extract-text.spec.ts.
    await expectRefused([message], 'ASSET.UNRECOGNIZED_REFERENCE');
  });
});
