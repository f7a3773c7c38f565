export * from './scripted-model.js';
export * from '../connector-sdk/testing/index.js';
