export * from './state.js';
export * from './fold.js';
