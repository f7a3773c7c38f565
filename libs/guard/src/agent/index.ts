export * from './guarded-agent.js';
export { assertNoSystemMessages, type GuardedCallOptions, validateCallOptions } from './call-options.js';
export { INPUT_ASSET_DENIAL_REASON, judgeAssetReference } from './input-assets.js';
export { ACTOR_CONTEXT_KEY, AGENT_AUDIT_CONTEXT_KEY } from '../context.js';
