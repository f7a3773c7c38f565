import { type MastraDBMessage } from '@mastra/core/memory';

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
    case 'tool-invocation':
      // Arguments and results replayed in the conversation are judged like any other input.
      return { channel: 'answer', text: JSON.stringify(part.toolInvocation ?? null) };
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
 * Extracts policy text from messages (`content.parts`, falling back to the legacy
 * `content.content` string). Returns 'unreadable' when a part cannot be classified, which
 * callers treat as a failure rather than passing it unjudged.
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
