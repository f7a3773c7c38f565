// Shared Jest configuration. Jest runs in native ESM mode (NODE_OPTIONS
// --experimental-vm-modules, set by each project's `test` script): @mastra/core's
// CommonJS build requires ESM-only AI SDK packages, so CommonJS Jest cannot load it.
import path from 'node:path';

/** @param {string} projectDir absolute path of the project */
export function createJestConfig(projectDir) {
  return {
    displayName: path.basename(projectDir),
    rootDir: projectDir,
    testEnvironment: 'node',
    testMatch: ['<rootDir>/src/**/*.spec.ts'],
    extensionsToTreatAsEsm: ['.ts'],
    moduleNameMapper: { '^(\\.{1,2}/.*)\\.js$': '$1' },
    transform: {
      '^.+\\.ts$': [
        '@swc/jest',
        {
          jsc: {
            parser: { syntax: 'typescript', decorators: true },
            transform: { legacyDecorator: true, decoratorMetadata: true },
            target: 'es2023',
          },
          module: { type: 'es6' },
          sourceMaps: 'inline',
        },
      ],
    },
    // Workspace packages resolve to their TypeScript sources, not their dist.
    testEnvironmentOptions: { customExportConditions: ['@gatehouse/source', 'node', 'node-addons'] },
    // Integration specs share one broker; a slow 2-core machine needs headroom.
    testTimeout: 60_000,
    reporters: ['default', path.join(import.meta.dirname, 'tools/jest-summary-reporter.mjs')],
    maxWorkers: 1,
  };
}
