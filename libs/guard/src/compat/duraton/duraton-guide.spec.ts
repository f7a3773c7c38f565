import { describe, it } from '@jest/globals';
import path from 'node:path';
import { readmeExamples, runReadmeExample } from '../../../../../tools/readme-examples.mjs';

// The Duraton migration guide's examples (Duraton's README, rewritten for gatehouse) run as they are written.
const packageDir = path.resolve(import.meta.dirname, '../../..');

describe('docs/migrating/duraton.md examples', () => {
  it.each(readmeExamples(packageDir, '../../docs/migrating/duraton.md'))('example $index runs', async (example) => {
    await runReadmeExample(packageDir, example, (file) => import(file));
  });
});
