export * from './state.js';
export * from './fold.js';
export * from './scope.js';
export * from './checkpoint.js';
