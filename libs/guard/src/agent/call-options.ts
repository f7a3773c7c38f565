import { RequestContext } from '@mastra/core/request-context';

/** The only per-call options a guarded agent accepts. */
export interface GuardedCallOptions {
  /** Trusted context from the host: actor, audit correlation. Required. */
  readonly requestContext: RequestContext;
  readonly runId?: string;
  /** Thread and resource ids only; memory configuration lives on the agent. */
  readonly memory?: { readonly thread: string | { readonly id: string }; readonly resource: string };
  readonly abortSignal?: AbortSignal;
}

const CALL_FIELDS = new Set(['requestContext', 'runId', 'memory', 'abortSignal']);

/** Validates call options; refuses anything else (structured output, processors, model, maxSteps ...). */
export function validateCallOptions(options: unknown, method: string): GuardedCallOptions {
  if (options === null || typeof options !== 'object' || Array.isArray(options)) {
    throw new TypeError(`${method}: options with a trusted requestContext are required`);
  }
  const record = options as Record<string, unknown>;
  const refused = Object.keys(record).filter((k) => !CALL_FIELDS.has(k));
  if (refused.length > 0) throw new TypeError(`${method}: option ${refused.map((k) => `"${k}"`).join(', ')} is not accepted by a guarded agent`);
  if (!(record['requestContext'] instanceof RequestContext)) throw new TypeError(`${method}: requestContext must be a RequestContext from trusted host code`);
  const out: { -readonly [K in keyof GuardedCallOptions]: GuardedCallOptions[K] } = { requestContext: record['requestContext'] };
  if (record['runId'] !== undefined) {
    if (typeof record['runId'] !== 'string' || record['runId'].length === 0 || record['runId'].length > 256) throw new TypeError(`${method}: runId must be a non-empty string`);
    out.runId = record['runId'];
  }
  if (record['abortSignal'] !== undefined) {
    if (!(record['abortSignal'] instanceof AbortSignal)) throw new TypeError(`${method}: abortSignal must be an AbortSignal`);
    out.abortSignal = record['abortSignal'];
  }
  if (record['memory'] !== undefined) out.memory = validateMemory(record['memory'], method);
  return Object.freeze(out);
}

function validateMemory(memory: unknown, method: string): GuardedCallOptions['memory'] {
  if (memory === null || typeof memory !== 'object' || Array.isArray(memory)) throw new TypeError(`${method}: memory must be { thread, resource }`);
  const record = memory as Record<string, unknown>;
  const extra = Object.keys(record).filter((k) => k !== 'thread' && k !== 'resource');
  if (extra.length > 0) throw new TypeError(`${method}: memory accepts only thread and resource`);
  const { thread, resource } = record;
  if (typeof resource !== 'string' || resource.length === 0) throw new TypeError(`${method}: memory.resource must be a non-empty string`);
  if (typeof thread === 'string' && thread.length > 0) return Object.freeze({ thread, resource });
  if (thread !== null && typeof thread === 'object' && !Array.isArray(thread)) {
    const keys = Object.keys(thread);
    const id = (thread as { id?: unknown }).id;
    if (keys.length === 1 && typeof id === 'string' && id.length > 0) return Object.freeze({ thread: Object.freeze({ id }), resource });
  }
  throw new TypeError(`${method}: memory.thread must be a non-empty id or { id }`);
}

type CallerMessage = string | { role?: unknown } | readonly unknown[];

/**
 * Refuses caller messages with role `system` (they would carry instruction authority past
 * the input policies), at the top level or in the one nested list Mastra flattens.
 */
export function assertNoSystemMessages(messages: unknown, method: string): void {
  const check = (entry: unknown, depth: number): void => {
    if (typeof entry === 'string') return;
    if (Array.isArray(entry)) {
      if (depth >= 1) throw new TypeError(`${method}: message lists may be nested one level at most`);
      for (const inner of entry) check(inner, depth + 1);
      return;
    }
    if (entry === null || typeof entry !== 'object') throw new TypeError(`${method}: a message must be a string or a message object`);
    const role = (entry as { role?: unknown }).role;
    if (role === 'system') throw new TypeError(`${method}: caller messages with role "system" are refused; put instructions in the agent's instructions`);
    if (role !== 'user' && role !== 'assistant' && role !== 'tool') throw new TypeError(`${method}: message role must be user, assistant or tool`);
  };
  if (typeof messages === 'string') return;
  if (Array.isArray(messages)) {
    for (const entry of messages as CallerMessage[]) check(entry, 0);
    return;
  }
  check(messages, 1);
}
