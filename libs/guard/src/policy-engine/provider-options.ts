// Call-level provider options: the settings a host may pass with a model call it starts itself
// (breakwater's `assertAcceptedCallProviderOptions`). They travel beside the messages, so no input
// policy reads them, and some bundled adapters spread a namespace into the request body: only a
// closed list of generation settings is accepted, everything else is refused before the call.
// The guarded agent's own handle accepts no provider options at all.

const OPENAI = [
  'reasoningEffort', 'reasoningSummary', 'reasoningMode', 'textVerbosity', 'serviceTier', 'parallelToolCalls', 'maxToolCalls', 'maxCompletionTokens',
  'logprobs', 'store', 'strictJsonSchema', 'truncation', 'include', 'promptCacheKey', 'promptCacheRetention', 'promptCacheOptions', 'forceReasoning',
];
const GOOGLE = ['thinkingConfig', 'responseModalities', 'mediaResolution', 'audioTimestamp', 'structuredOutputs', 'streamFunctionCallArguments', 'serviceTier', 'sharedRequestType', 'requestType'];

/** The accepted namespaces and, in each, the accepted keys. */
export const ACCEPTED_CALL_PROVIDER_OPTIONS: Readonly<Record<string, readonly string[]>> = Object.freeze({
  mastra: Object.freeze(['schedule']),
  openai: Object.freeze(OPENAI),
  azure: Object.freeze(OPENAI),
  anthropic: Object.freeze(['thinking', 'effort', 'sendReasoning', 'structuredOutputMode', 'disableParallelToolUse', 'cacheControl', 'toolStreaming', 'taskBudget', 'speed', 'inferenceGeo']),
  google: Object.freeze(GOOGLE),
  vertex: Object.freeze(GOOGLE),
  xai: Object.freeze(['reasoningEffort', 'logprobs', 'topLogprobs', 'store', 'include', 'parallel_function_calling']),
  mistral: Object.freeze(['safePrompt', 'documentImageLimit', 'documentPageLimit', 'structuredOutputs', 'strictJsonSchema', 'parallelToolCalls', 'reasoningEffort']),
  groq: Object.freeze(['reasoningFormat', 'reasoningEffort', 'parallelToolCalls', 'structuredOutputs', 'strictJsonSchema', 'serviceTier']),
  deepseek: Object.freeze(['thinking', 'reasoningEffort', 'strictJsonSchema']),
  alibaba: Object.freeze(['enableThinking', 'thinkingBudget', 'parallelToolCalls']),
});

function isPlainObject(value: unknown): value is Record<string, unknown> {
  if (value === null || typeof value !== 'object' || Array.isArray(value)) return false;
  const proto = Object.getPrototypeOf(value) as unknown;
  return proto === Object.prototype || proto === null;
}

// A namespace or key is echoed only when it looks like one: a caller's key may be anything.
const shown = (name: string): string => (/^[A-Za-z_][A-Za-z0-9_]{0,39}$/.test(name) ? `"${name}"` : '(name not shown)');

/**
 * Throws a TypeError unless `providerOptions` is undefined or a plain object whose namespaces and
 * keys are all in {@link ACCEPTED_CALL_PROVIDER_OPTIONS} (an entry whose value is undefined counts
 * as absent). The error names the namespace or key, never a value.
 */
export function assertAcceptedCallProviderOptions(providerOptions: unknown): void {
  if (providerOptions === undefined) return;
  if (!isPlainObject(providerOptions)) throw new TypeError('providerOptions must be a plain object');
  for (const [namespace, entries] of Object.entries(providerOptions)) {
    if (entries === undefined) continue;
    const accepted = Object.hasOwn(ACCEPTED_CALL_PROVIDER_OPTIONS, namespace) ? ACCEPTED_CALL_PROVIDER_OPTIONS[namespace] : undefined;
    if (accepted === undefined) throw new TypeError(`providerOptions namespace ${shown(namespace)} is not accepted`);
    if (!isPlainObject(entries)) throw new TypeError(`providerOptions namespace ${shown(namespace)} must be a plain object`);
    for (const [key, value] of Object.entries(entries)) {
      if (value !== undefined && !accepted.includes(key)) throw new TypeError(`providerOptions ${shown(namespace)} key ${shown(key)} is not accepted`);
    }
  }
}
