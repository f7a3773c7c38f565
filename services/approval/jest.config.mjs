import { createJestConfig } from '../../jest.preset.mjs';

// The specs serve the inbox's browser build from dist: built first, so they never serve a stale one.
export default { ...createJestConfig(import.meta.dirname), globalSetup: '<rootDir>/inbox-assets.build.mjs' };
