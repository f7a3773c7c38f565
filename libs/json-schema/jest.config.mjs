import { createJestConfig } from '../../jest.preset.mjs';

export default createJestConfig(import.meta.dirname);
