import { describe, it } from '@jest/globals';
import path from 'node:path';
import { readmeExamples, runReadmeExample } from '../../../../tools/readme-examples.mjs';

// Runs every ```ts example block of docs/migrating/breakwater.md, as readme.int.spec.ts does for the
// README: the breakwater README's examples, rewritten for gatehouse, cannot rot.
const packageDir = path.resolve(import.meta.dirname, '../..');

describe('docs/migrating/breakwater.md examples', () => {
  it.each(readmeExamples(packageDir, '../../docs/migrating/breakwater.md'))('example $index runs', async (example) => {
    await runReadmeExample(packageDir, example, (file) => import(file));
  });
});
