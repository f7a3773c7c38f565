export * from './fold.js';
