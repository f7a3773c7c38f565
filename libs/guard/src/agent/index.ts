export * from './guarded-agent.js';
export { assertNoSystemMessages, type GuardedCallOptions, validateCallOptions } from './call-options.js';
export { INPUT_ASSET_DENIAL_REASON, judgeAssetReference } from './input-assets.js';
export { ACTOR_CONTEXT_KEY, AGENT_AUDIT_CONTEXT_KEY } from '../context.js';
// breakwater exported this from its agent subpath, for hosts that start a model call themselves.
export { assertAcceptedCallProviderOptions } from '../policy-engine/provider-options.js';
