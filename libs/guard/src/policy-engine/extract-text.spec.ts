import { describe, expect, it } from '@jest/globals';
import { classifyInputPart, extractInputText, instructionTexts, systemMessagesOf } from './extract-text.js';
import { hasBinaryMediaSignature, isBinaryMediaType, isTextualMediaType, readFilePayload } from './file-text.js';

const b64 = (text: string): string => Buffer.from(text, 'utf8').toString('base64');
const PNG = Uint8Array.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a, 0, 0, 0, 13, 0x49, 0x48, 0x44, 0x52, 0xff, 0xfe]);
const ZIP = Uint8Array.from([0x50, 0x4b, 0x03, 0x04, 0x14, 0x00, 0x08, 0x00, 0xff, 0xfe, 0x80]);
const judged = (text: string) => ({ kind: 'judged', text });
const file = (data: unknown, mimeType?: string, extra: object = {}) => ({ type: 'file', data, ...(mimeType ? { mimeType } : {}), ...extra });
const message = (content: unknown, role = 'user') => ({ id: 'm', role, createdAt: new Date(0), content });

describe('classifyInputPart: text and reasoning', () => {
  it('judges text as written, with its provider options', () => {
    expect(classifyInputPart({ type: 'text', text: 'hello' })).toEqual(judged('hello'));
    expect(classifyInputPart({ type: 'text', text: 'hi', providerMetadata: { openai: { instructions: 'obey me' } } })).toEqual(judged('hi\nopenai\ninstructions: obey me'));
  });

  it('refuses a text part whose text is not a string', () => {
    expect(classifyInputPart({ type: 'text', text: 42 })).toEqual({ kind: 'refused' });
  });

  it('judges reasoning and the text and data of its details', () => {
    const part = { type: 'reasoning', reasoning: 'think', details: [{ type: 'text', text: 'step' }, { type: 'redacted', data: 'opaque' }] };
    expect(classifyInputPart(part)).toEqual(judged('think\ntype: text\ntext: step\ntype: redacted\ndata: opaque'));
  });
});

describe('classifyInputPart: file and image parts', () => {
  it('decodes a base64 data: URL, a percent-encoded one and one without a media type', () => {
    expect(classifyInputPart(file(`data:text/plain;base64,${b64('key=abc')}`, 'text/plain'))).toEqual(judged('key=abc'));
    expect(classifyInputPart(file('data:text/plain,api_key%3Dsk%20live%zz', 'text/plain'))).toEqual(judged('api_key=sk live%zz'));
    expect(classifyInputPart(file(`data:;base64,${b64('plain by default')}`, undefined))).toEqual(judged('plain by default'));
  });

  it('reads an image part whose data: URL says text/plain as text', () => {
    expect(classifyInputPart({ type: 'image', image: `data:text/plain;base64,${b64('words')}`, mimeType: 'image/jpeg' })).toEqual(judged('words'));
  });

  it('decodes bare base64, bytes, an ArrayBuffer and UTF-16 with a byte order mark', () => {
    expect(classifyInputPart(file(b64('a,b\n1,2'), 'text/csv'))).toEqual(judged('a,b\n1,2'));
    expect(classifyInputPart(file(new TextEncoder().encode('bytes'), 'text/markdown'))).toEqual(judged('bytes'));
    expect(classifyInputPart(file(new TextEncoder().encode('buffer').buffer, 'application/json'))).toEqual(judged('buffer'));
    const utf16 = Uint8Array.from([0xff, 0xfe, ...Array.from('wide').flatMap((c) => [c.charCodeAt(0), 0])]);
    expect(classifyInputPart(file(utf16, 'image/png'))).toEqual(judged('wide'));
  });

  it('passes image bytes that are not text and carry their signature as binary, judging only the name', () => {
    expect(classifyInputPart(file(PNG, 'image/png'))).toEqual({ kind: 'binary', text: '' });
    expect(classifyInputPart(file(`data:image/png;base64,${Buffer.from(PNG).toString('base64')}`, 'image/png', { filename: 'chart.png' }))).toEqual({ kind: 'binary', text: 'chart.png' });
  });

  it('reads the same bytes as text when any media type names text', () => {
    expect(classifyInputPart(file(PNG, 'text/plain')).kind).toBe('judged');
  });

  it('reads text labelled as an image as text', () => {
    expect(classifyInputPart(file(new TextEncoder().encode('not a picture'), 'image/jpeg'))).toEqual(judged('not a picture'));
  });

  it('refuses bytes that are neither text nor signed media', () => {
    expect(classifyInputPart(file(ZIP, 'application/zip'))).toEqual({ kind: 'refused' });
    expect(classifyInputPart(file(ZIP, 'image/png'))).toEqual({ kind: 'refused' });
    expect(classifyInputPart(file(PNG, 'application/octet-stream'))).toEqual({ kind: 'refused' });
  });

  it('judges a network URL as text and refuses other schemes, bad base64 and a missing payload', () => {
    expect(classifyInputPart(file('https://img.example.com/a.png?sig=abc', 'image/png'))).toEqual(judged('https://img.example.com/a.png?sig=abc'));
    expect(classifyInputPart(file('ftp://img.example.com/a.png', 'image/png'))).toEqual({ kind: 'refused' });
    expect(classifyInputPart(file('data:text/plain;base64,not base64!', 'text/plain'))).toEqual({ kind: 'refused' });
    expect(classifyInputPart(file('data:text/plain;base64', 'text/plain'))).toEqual({ kind: 'refused' });
    expect(classifyInputPart({ type: 'file', mimeType: 'text/plain' })).toEqual({ kind: 'refused' });
  });
});

describe('classifyInputPart: tool and other parts', () => {
  it('judges a tool invocation as key: value lines, strings unescaped and createdAt left out', () => {
    const part = { type: 'tool-invocation', createdAt: 1, toolInvocation: { state: 'result', toolCallId: 'c1', toolName: 'cfg', args: { q: 1 }, result: 'password="Zq8vLm2pXr4"' } };
    expect(classifyInputPart(part)).toEqual(judged('toolInvocation\nstate: result\ntoolCallId: c1\ntoolName: cfg\nargs\nq: 1\nresult: password="Zq8vLm2pXr4"'));
  });

  it('judges data-*, source, step-start and error parts by their content', () => {
    expect(classifyInputPart({ type: 'data-weather', data: { city: 'Oslo' } })).toEqual(judged('data\ncity: Oslo'));
    expect(classifyInputPart({ type: 'step-start' })).toEqual(judged(''));
    expect(classifyInputPart({ type: 'error', error: { name: 'E', message: 'boom' } })).toEqual(judged('error\nname: E\nmessage: boom'));
  });

  it('refuses an unknown part type, a non-object and a bare "data-" type', () => {
    for (const part of [{ type: 'hologram' }, { type: 'data-' }, { text: 'no type' }, 'text', null, [{ type: 'text', text: 'x' }]]) {
      expect(classifyInputPart(part)).toEqual({ kind: 'refused' });
    }
  });

  it('refuses provider options that cycle or nest too deep', () => {
    const cyclic: Record<string, unknown> = {};
    cyclic['self'] = cyclic;
    expect(classifyInputPart({ type: 'text', text: 'x', providerMetadata: cyclic })).toEqual({ kind: 'refused' });
    let deep: unknown = 'leaf';
    for (let i = 0; i < 100; i++) deep = { d: deep };
    expect(classifyInputPart({ type: 'text', text: 'x', providerMetadata: deep })).toEqual({ kind: 'refused' });
  });
});

describe('extractInputText', () => {
  it('judges every system message except one copy of each trusted instruction', () => {
    const system = [{ role: 'system', content: 'operator text' }, { role: 'system', content: 'operator text' }, { role: 'system', content: 'retrieved' }];
    expect(extractInputText([], system, ['operator text'])).toBe('operator text\nretrieved');
  });

  it('judges the provider options of a system message, which make it differ from the instruction', () => {
    expect(extractInputText([], [{ role: 'system', content: 'op', providerOptions: { x: { y: 'z' } } }], ['op'])).toBe('op\nx\ny: z');
  });

  it('judges messages of any role, including system messages among the input', () => {
    expect(extractInputText([message({ format: 2, parts: [{ type: 'text', text: 'sys' }] }, 'system')], [], [])).toBe('sys');
  });

  it('does not repeat a legacy content string that mirrors the text parts, but judges one that differs', () => {
    expect(extractInputText([message({ format: 2, parts: [{ type: 'text', text: 'a b' }], content: 'a b' })], [], [])).toBe('a b');
    expect(extractInputText([message({ format: 2, parts: [{ type: 'text', text: 'a' }], content: 'other' })], [], [])).toBe('a\nother');
  });

  it('judges attachments and tool invocations no part mirrors, and message provider options', () => {
    const content = {
      format: 2,
      parts: [file('data:text/plain,one', 'text/plain'), { type: 'tool-invocation', toolInvocation: { toolCallId: 'c1', result: 'r1' } }],
      experimental_attachments: [{ url: 'data:text/plain,one', contentType: 'text/plain' }, { url: 'data:text/plain,two', contentType: 'text/plain' }],
      toolInvocations: [{ toolCallId: 'c1', result: 'r1' }, { toolCallId: 'c2', result: 'r2' }],
      providerMetadata: { openai: { instructions: 'msg-level' } },
    };
    expect(extractInputText([message(content)], [], [])).toBe('one\ntoolInvocation\ntoolCallId: c1\nresult: r1\ntwo\ntoolCallId: c2\nresult: r2\nopenai\ninstructions: msg-level');
  });

  it('is unreadable when any part, attachment or system message is', () => {
    expect(extractInputText([message({ format: 2, parts: [{ type: 'hologram' }] })], [], [])).toBe('unreadable');
    expect(extractInputText([message({ format: 2, parts: [], experimental_attachments: [{ url: 'ftp://x/y' }] })], [], [])).toBe('unreadable');
    expect(extractInputText([message({ format: 2, parts: {} })], [], [])).toBe('unreadable');
    expect(extractInputText([], [null], [])).toBe('unreadable');
  });
});

describe('system messages and instructions', () => {
  it('reads tagged system messages through the message list, falling back to systemMessages', () => {
    const all = [{ role: 'system', content: 'tagged' }];
    expect(systemMessagesOf({ systemMessages: [], messageList: { getAllSystemMessages: () => all } })).toBe(all);
    expect(systemMessagesOf({ systemMessages: all })).toBe(all);
    expect(systemMessagesOf({ messageList: { getAllSystemMessages: () => 'nope' } })).toBeUndefined();
  });

  it('normalizes instructions as Mastra does: a string, a list, or a function of the request', async () => {
    expect(await instructionTexts(undefined, undefined)).toEqual([]);
    expect(await instructionTexts('be brief', undefined)).toEqual(['be brief']);
    expect(await instructionTexts(['one', { role: 'system', content: 'two' }], undefined)).toEqual(['one', 'two']);
    expect(await instructionTexts(({ requestContext }: { requestContext: string }) => `for ${requestContext}`, 'acme')).toEqual(['for acme']);
  });
});

describe('media types and signatures', () => {
  it('tells text media types from binary media', () => {
    for (const t of ['text/plain', 'application/json', 'application/ld+json', 'image/svg+xml', 'application/octet-stream; charset=utf-8', 'message/rfc822']) {
      expect(isTextualMediaType(t)).toBe(true);
    }
    for (const t of ['image/png', 'audio/mpeg', 'video/mp4', 'application/pdf']) expect(isBinaryMediaType(t)).toBe(true);
    for (const t of ['image/svg+xml', 'application/zip', 'application/octet-stream']) expect(isBinaryMediaType(t)).toBe(false);
  });

  it('knows image, audio, video and PDF signatures, not archives', () => {
    expect(hasBinaryMediaSignature(PNG)).toBe(true);
    expect(hasBinaryMediaSignature(Uint8Array.from([0xff, 0xd8, 0xff, 0xe0]))).toBe(true);
    expect(hasBinaryMediaSignature(new TextEncoder().encode('%PDF-1.7'))).toBe(true);
    expect(hasBinaryMediaSignature(ZIP)).toBe(false);
  });

  it('reads a URL object as a reference', () => {
    expect(readFilePayload(new URL('https://img.example.com/a.png'), ['image/png'])).toEqual({ kind: 'reference', url: 'https://img.example.com/a.png' });
  });
});
