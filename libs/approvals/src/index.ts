export * from './state.js';
export * from './approval-id.js';
export * from './fold.js';
