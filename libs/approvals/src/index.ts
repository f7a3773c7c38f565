export * from './state.js';
export * from './approval-id.js';
export * from './commitment.js';
export * from './fold.js';
