import { describe, expect, it } from '@jest/globals';
import { RequestContext } from '@mastra/core/request-context';
import { AuditLogger } from '../audit/audit-logger.js';
import { ACTOR_CONTEXT_KEY } from '../context.js';
import { scriptedModel } from '../testing/scripted-model.js';
import { createGuardedAgent } from './guarded-agent.js';
import { judgeAssetReference, normalizeAssetOrigins } from './input-assets.js';

const origins = normalizeAssetOrigins(['https://img.example.com', 'http://localhost:8080/'], 'test');

describe('input asset references', () => {
  it.each([
    ['a listed https origin', 'https://img.example.com/cat.png'],
    ['a listed origin given with a trailing slash', 'http://localhost:8080/x'],
    ['a data URL', 'data:image/png;base64,iVBORw0KGgo='],
    ['raw base64', 'iVBORw0KGgoAAAANSUhEUg=='],
    ['binary data', new Uint8Array([1, 2, 3])],
  ])('allows %s', (_what, value) => {
    expect(judgeAssetReference(value, origins)).toEqual({ allowed: true });
  });

  it.each([
    ['an unlisted origin', 'https://cdn.evil.example/cat.png', 'ASSET.ORIGIN_NOT_ALLOWED'],
    ['the right host on another port', 'https://img.example.com:8443/cat.png', 'ASSET.ORIGIN_NOT_ALLOWED'],
    ['credentials', 'https://u:p@img.example.com/cat.png', 'ASSET.CREDENTIALS_IN_URL'],
    ['ftp', 'ftp://img.example.com/cat.png', 'ASSET.SCHEME_NOT_ALLOWED'],
    ['file', new URL('file:///etc/passwd'), 'ASSET.SCHEME_NOT_ALLOWED'],
    ['a scheme hidden in a base64 data URL', 'data:image/jpeg;base64,ftp://img.example.com/a.png', 'ASSET.SCHEME_NOT_ALLOWED'],
  ])('refuses %s', (_what, value, code) => {
    expect(judgeAssetReference(value, origins)).toEqual({ allowed: false, code });
  });

  it('refuses origin entries that are not bare http(s) origins', () => {
    expect(() => normalizeAssetOrigins(['https://img.example.com/path'], 'test')).toThrow(TypeError);
    expect(() => normalizeAssetOrigins(['ftp://img.example.com'], 'test')).toThrow(TypeError);
    expect(() => normalizeAssetOrigins(['not a url'], 'test')).toThrow(TypeError);
  });
});

// An attacker's view: a stored-format message can name a file in more places than `parts`, and
// Mastra turns each into a file the model is given (or fetches). Every one is judged by origin.
describe('input asset references outside the parts, through a guarded agent', () => {
  const EVIL = 'https://evil.example.net/x.png';
  const createdAt = new Date('2026-01-01T00:00:00Z');
  const user = (content: Record<string, unknown>, id = 'u1') => ({ id, role: 'user', createdAt, content: { format: 2, ...content } });
  const assistantWithResult = (providerMetadata: unknown, result: unknown = { ok: true }) => ({
    id: 'a1', role: 'assistant', createdAt,
    content: { format: 2, parts: [{ type: 'tool-invocation', toolInvocation: { state: 'result', toolCallId: 'c1', toolName: 'lookup', args: {}, result }, providerMetadata }] },
  });

  function run(messages: unknown[]) {
    const model = scriptedModel({ text: 'seen' });
    const audit = new AuditLogger();
    const agent = createGuardedAgent({
      id: 'viewer', name: 'Viewer', instructions: 'Describe images.', model: model as never,
      allowedRoles: ['operator'], allowedInputAssetOrigins: ['https://img.example.com'], audit,
    });
    const requestContext = new RequestContext();
    requestContext.set(ACTOR_CONTEXT_KEY, { id: 'u1', role: 'operator' });
    return { model, audit, result: agent.generate(messages as never, { requestContext }) };
  }

  it.each([
    ['an experimental attachment of a message with text parts only', [user({ parts: [{ type: 'text', text: 'look' }], experimental_attachments: [{ url: EVIL, contentType: 'image/png' }] })]],
    ['an experimental attachment of a message with no parts', [user({ parts: [], content: 'look', experimental_attachments: [{ url: EVIL, contentType: 'image/png' }] })]],
    ['a file-url in the stored model output of a tool result', [assistantWithResult({ mastra: { modelOutput: { type: 'content', value: [{ type: 'file-url', url: EVIL, mediaType: 'image/png' }] } } }), user({ parts: [{ type: 'text', text: 'and?' }] }, 'u2')]],
    ['an image-url in the stored model output of a tool result', [assistantWithResult({ mastra: { modelOutput: { type: 'content', value: [{ type: 'image-url', url: EVIL }] } } }), user({ parts: [{ type: 'text', text: 'and?' }] }, 'u2')]],
    ['an MCP-style image in a tool result whose data is a URL', [assistantWithResult(undefined, { content: [{ type: 'image', data: EVIL, mimeType: 'image/png' }] }), user({ parts: [{ type: 'text', text: 'and?' }] }, 'u2')]],
  ])('refuses %s from an unlisted origin before the model runs', async (_where, messages) => {
    const { model, audit, result } = run(messages);
    const answer = await result;
    expect(model.prompts.join('')).not.toContain('evil.example.net');
    expect(model.prompts).toHaveLength(0);
    expect(answer.tripwire).toBeDefined();
    expect(JSON.stringify(audit.events())).not.toContain('evil.example.net');
  });

  it('lets an attachment from a listed origin through to the model', async () => {
    const { model, result } = run([user({ parts: [{ type: 'text', text: 'look' }], experimental_attachments: [{ url: 'https://img.example.com/a.png', contentType: 'image/png' }] })]);
    expect((await result).text).toBe('seen');
    expect(model.prompts).toHaveLength(1);
    expect(model.prompts[0]).toContain('https://img.example.com/a.png');
  });
});
