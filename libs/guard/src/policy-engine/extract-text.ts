import { MessageList } from '@mastra/core/agent';
import { type MastraDBMessage } from '@mastra/core/memory';
import { decodeText, readFilePayload } from './file-text.js';

/** Text of one channel across messages, as policies judge it. */
export interface ChannelText {
  readonly answer: string;
  readonly reasoning: string;
}

type Part = { type?: unknown; text?: unknown; reasoning?: unknown; details?: unknown; toolInvocation?: unknown; data?: unknown; mimeType?: unknown };

function partText(part: Part): { channel: 'answer' | 'reasoning'; text: string } | 'unreadable' | undefined {
  switch (part.type) {
    case 'text':
      return typeof part.text === 'string' ? { channel: 'answer', text: part.text } : 'unreadable';
    case 'reasoning': {
      if (typeof part.reasoning === 'string' && part.reasoning.length > 0) return { channel: 'reasoning', text: part.reasoning };
      const details = Array.isArray(part.details) ? (part.details as { text?: unknown }[]) : [];
      return { channel: 'reasoning', text: details.map((d) => (typeof d.text === 'string' ? d.text : '')).join('') };
    }
    case 'tool-invocation': {
      // Arguments and results the model wrote or read, as their leaves (JSON escapes would hide a newline in a phrase).
      const text = leafText(part.toolInvocation ?? null);
      return text === undefined ? 'unreadable' : { channel: 'answer', text };
    }
    case 'file':
    case 'image':
    case 'step-start':
    case 'source':
      return undefined;
    default:
      return 'unreadable';
  }
}

/**
 * Extracts the model's answer and reasoning from output messages (`content.parts`, falling
 * back to the legacy `content.content` string). Returns 'unreadable' when a part cannot be
 * classified, which callers treat as a failure rather than passing it unjudged. Input is read
 * by `extractInputText`.
 */
export function extractMessageText(messages: readonly MastraDBMessage[]): ChannelText | 'unreadable' {
  const answer: string[] = [];
  const reasoning: string[] = [];
  for (const message of messages) {
    if (message.role === 'system') continue;
    const content = message.content as { parts?: Part[]; content?: unknown };
    const parts = Array.isArray(content?.parts) ? content.parts : [];
    if (parts.length === 0 && typeof content?.content === 'string') answer.push(content.content);
    for (const part of parts) {
      const extracted = partText(part);
      if (extracted === 'unreadable') return 'unreadable';
      if (extracted === undefined) continue;
      (extracted.channel === 'answer' ? answer : reasoning).push(extracted.text);
    }
  }
  return { answer: answer.join('\n'), reasoning: reasoning.join('\n') };
}

// ---------------------------------------------------------------------------------------------
// Input: every part is judged, passed as binary media, or refused.

/**
 * How the input policies treat one part: `judged` (its text), `binary` (inline image, audio,
 * video or PDF bytes, not text: only the part's name and provider options are judged), or
 * `refused` (it cannot be read, so the call fails closed).
 */
export type InputPartClass =
  | { readonly kind: 'judged'; readonly text: string }
  | { readonly kind: 'binary'; readonly text: string }
  | { readonly kind: 'refused' };

const REFUSED: InputPartClass = Object.freeze({ kind: 'refused' });
const MAX_DEPTH = 64;

class Unreadable extends Error {}

/**
 * Every primitive a JSON-like value holds, one a line, a property as `key: value` (so `api_key:
 * sk_…` reads as the assignment it is), strings raw rather than JSON-escaped (an escaped quote
 * would hide `password="…"`). Mastra's own `createdAt` stamps are left out. Throws Unreadable
 * on a cycle or a structure deeper than MAX_DEPTH.
 */
function leaves(value: unknown, out: string[], key?: string, depth = 0, seen = new Set<object>()): string[] {
  const prefix = key === undefined ? '' : `${key}: `;
  if (value === null || value === undefined || typeof value === 'function' || typeof value === 'symbol') return out;
  if (typeof value === 'string') out.push(prefix + value);
  else if (typeof value === 'number' || typeof value === 'boolean' || typeof value === 'bigint') {
    if (key !== 'createdAt') out.push(prefix + String(value));
  } else if (value instanceof Date) {
    if (key !== 'createdAt') out.push(prefix + (Number.isNaN(value.getTime()) ? '' : value.toISOString()));
  } else if (value instanceof URL) out.push(prefix + value.href);
  else if (ArrayBuffer.isView(value) || value instanceof ArrayBuffer) {
    const bytes = value instanceof ArrayBuffer ? new Uint8Array(value) : new Uint8Array(value.buffer, value.byteOffset, value.byteLength);
    out.push(prefix + (decodeText(bytes, false) ?? ''));
  } else {
    if (depth >= MAX_DEPTH || seen.has(value)) throw new Unreadable();
    seen.add(value);
    if (key !== undefined) out.push(key);
    if (Array.isArray(value)) for (const item of value) leaves(item, out, undefined, depth + 1, seen);
    else for (const [k, v] of Object.entries(value)) leaves(v, out, k, depth + 1, seen);
    seen.delete(value);
  }
  return out;
}

/** The text policies read of a structured value (its leaves, strings raw), or undefined when it cannot be walked. */
export function leafText(value: unknown): string | undefined {
  try {
    return leaves(value, []).join('\n');
  } catch (error) {
    if (error instanceof Unreadable || error instanceof RangeError) return undefined;
    throw error;
  }
}

const KNOWN_PART_TYPES = ['text', 'reasoning', 'file', 'image', 'tool-invocation', 'step-start', 'source', 'source-document', 'error'] as const;
/** Mastra's message part types (`data-*` parts as `data`). */
type KnownPartType = (typeof KNOWN_PART_TYPES)[number] | 'data';

function knownType(type: unknown): KnownPartType | undefined {
  if (typeof type !== 'string') return undefined;
  if (type.startsWith('data-') && type.length > 'data-'.length) return 'data';
  return (KNOWN_PART_TYPES as readonly string[]).includes(type) ? (type as KnownPartType) : undefined;
}

function assertNever(value: never): never {
  throw new TypeError(`unclassified part type ${String(value)}`);
}

const join = (...texts: (string | undefined)[]): string => texts.filter((t): t is string => t !== undefined && t.length > 0).join('\n');

/** A file or image part: each payload field decoded and read; a payload that cannot be read refuses. */
function filePart(part: Record<string, unknown>, options: string): InputPartClass {
  const declared = [part['mimeType'], part['mediaType'], part['contentType']].filter((t): t is string => typeof t === 'string');
  const payloads = [part['data'], part['image'], part['url']].filter((v) => v !== undefined && v !== null);
  if (payloads.length === 0) return REFUSED;
  const names = leafText([part['filename'], part['name']]);
  const texts: string[] = [];
  let binary = true;
  for (const payload of payloads) {
    const reading = readFilePayload(payload, declared);
    if (reading.kind === 'unreadable') return REFUSED;
    if (reading.kind === 'binary') continue;
    binary = false;
    // A network URL is judged as text (a query string can carry a secret); what it points to is
    // fetched later, from an origin the input asset guard allowed.
    texts.push(reading.kind === 'text' ? reading.text : reading.url);
  }
  return { kind: binary ? 'binary' : 'judged', text: join(...texts, names, options) };
}

/**
 * Classifies one input message part. Text and reasoning are judged as written; a file or image
 * part by its decoded payload (see `readFilePayload`); tool invocations (calls and results
 * replayed or supplied by the client), sources, errors, step markers and `data-*` parts by
 * every key and value they hold; the provider options of any part are judged too. An unknown
 * part type, or one whose content is not what its type promises, is refused.
 */
export function classifyInputPart(part: unknown): InputPartClass {
  if (part === null || typeof part !== 'object' || Array.isArray(part)) return REFUSED;
  const p = part as Record<string, unknown>;
  const type = knownType(p['type']);
  if (type === undefined) return REFUSED;
  const options = leafText([p['providerMetadata'], p['providerOptions']]);
  if (options === undefined) return REFUSED;
  switch (type) {
    case 'text':
      return typeof p['text'] === 'string' ? { kind: 'judged', text: join(p['text'], options) } : REFUSED;
    case 'reasoning': {
      const details = leafText(p['details']);
      if (details === undefined || (p['reasoning'] !== undefined && typeof p['reasoning'] !== 'string')) return REFUSED;
      return { kind: 'judged', text: join(p['reasoning'] as string | undefined, typeof p['text'] === 'string' ? p['text'] : undefined, details, options) };
    }
    case 'file':
    case 'image':
      return filePart(p, options);
    case 'tool-invocation':
    case 'source':
    case 'source-document':
    case 'error':
    case 'step-start':
    case 'data': {
      const { type: _type, ...rest } = p;
      const text = leafText(rest);
      return text === undefined ? REFUSED : { kind: 'judged', text };
    }
    default:
      return assertNever(type);
  }
}

const squash = (text: string): string => text.replace(/\s+/g, '');

/**
 * Text of the fields beside `parts` that can reach the model: the legacy `content` string
 * (unless it repeats the text parts), legacy reasoning, attachments not mirrored by a file part,
 * tool invocations not mirrored by a part, and the message's provider options.
 */
function besideParts(content: Record<string, unknown>, parts: readonly Record<string, unknown>[]): string | undefined {
  const texts: (string | undefined)[] = [];
  const legacy = content['content'];
  const partText = parts.filter((p) => p['type'] === 'text').map((p) => String(p['text']));
  if (typeof legacy !== 'string') texts.push(leafText(legacy));
  else if (squash(legacy) !== squash(partText.join(''))) texts.push(legacy);
  if (typeof content['reasoning'] === 'string' && !parts.some((p) => p['type'] === 'reasoning')) texts.push(content['reasoning']);
  const fileData = new Set(parts.filter((p) => p['type'] === 'file' || p['type'] === 'image').map((p) => p['data'] ?? p['image']));
  const attachments = content['experimental_attachments'];
  for (const attachment of Array.isArray(attachments) ? (attachments as unknown[]) : []) {
    const a = (attachment ?? {}) as Record<string, unknown>;
    if (fileData.has(a['url'])) {
      texts.push(leafText(a['name']));
      continue;
    }
    const read = classifyInputPart({ type: 'file', data: a['url'], contentType: a['contentType'], name: a['name'] });
    texts.push(read.kind === 'refused' ? undefined : read.text);
  }
  const callIds = new Set<unknown>(parts.map((p) => (p['toolInvocation'] as { toolCallId?: unknown } | undefined)?.toolCallId).filter((id) => id !== undefined));
  const invocations = Array.isArray(content['toolInvocations']) ? (content['toolInvocations'] as { toolCallId?: unknown }[]) : [];
  texts.push(leafText(invocations.filter((i) => !callIds.has(i?.toolCallId))), leafText(content['providerMetadata']));
  return texts.includes(undefined) ? undefined : join(...texts);
}

function messageText(message: unknown): string | undefined {
  const content = (message as { content?: unknown } | null)?.content;
  if (typeof content === 'string') return content;
  if (content === null || typeof content !== 'object') return undefined;
  const record = content as Record<string, unknown>;
  if (record['parts'] !== undefined && !Array.isArray(record['parts'])) return undefined;
  const parts = (record['parts'] ?? []) as Record<string, unknown>[];
  const texts: string[] = [];
  for (const part of parts) {
    const read = classifyInputPart(part);
    if (read.kind === 'refused') return undefined;
    texts.push(read.text);
  }
  const beside = besideParts(record, parts);
  return beside === undefined ? undefined : join(...texts, beside);
}

/** The text of a system message (its content and provider options), or undefined when unreadable. */
export function systemMessageText(message: unknown): string | undefined {
  if (message === null || typeof message !== 'object') return undefined;
  const m = message as Record<string, unknown>;
  const content = typeof m['content'] === 'string' ? m['content'] : leafText(m['content']);
  const options = leafText([m['providerOptions'], m['experimental_providerMetadata'], m['providerMetadata']]);
  return content === undefined || options === undefined ? undefined : join(content, options);
}

/** Every system message that reaches the model: tagged ones too, which `systemMessages` omits. */
export function systemMessagesOf(args: { readonly systemMessages?: unknown; readonly messageList?: unknown }): readonly unknown[] | undefined {
  const list = args.messageList as { getAllSystemMessages?: () => unknown } | undefined;
  const all: unknown = typeof list?.getAllSystemMessages === 'function' ? list.getAllSystemMessages() : (args.systemMessages ?? []);
  return Array.isArray(all) ? all : undefined;
}

/** The agent's own instructions as the texts of the system messages Mastra makes of them. */
export async function instructionTexts(instructions: unknown, requestContext: unknown): Promise<string[] | undefined> {
  if (instructions === undefined) return [];
  const resolved = typeof instructions === 'function' ? await (instructions as (a: object) => unknown)({ requestContext }) : instructions;
  const texts = new MessageList().addSystem(resolved as never).getAllSystemMessages().map(systemMessageText);
  return texts.includes(undefined) ? undefined : (texts as string[]);
}

/**
 * The text the input policies judge: every input message (whatever its role) part by part, and
 * every system message except those equal to the agent's own instructions (`trusted`: the
 * operator's configuration). 'unreadable' when anything cannot be classified.
 */
export function extractInputText(messages: readonly unknown[], systemMessages: readonly unknown[], trusted: readonly string[]): string | 'unreadable' {
  const texts: string[] = [];
  const unused = [...trusted];
  for (const system of systemMessages) {
    const text = systemMessageText(system);
    if (text === undefined) return 'unreadable';
    const index = unused.indexOf(text);
    if (index >= 0) unused.splice(index, 1);
    else texts.push(text);
  }
  for (const message of messages) {
    const text = messageText(message);
    if (text === undefined) return 'unreadable';
    texts.push(text);
  }
  return join(...texts);
}
