export * from './types.js';
export * from './policy-engine.js';
export * from './content-policy-gate.js';
export { extractMessageText } from './extract-text.js';
export { normalizedView } from './normalized-view.js';
export * from './policies/index.js';
