import { describe, it } from '@jest/globals';
import path from 'node:path';
import { readmeExamples, runReadmeExample } from '../../../../tools/readme-examples.mjs';

// Runs every ```ts example block of docs/migrating/hazeljs.md (the HazelJS agent-gatekeeper README's
// examples, rewritten for gatehouse), as readme.int.spec.ts does for the README: they cannot rot.
const packageDir = path.resolve(import.meta.dirname, '../..');

describe('docs/migrating/hazeljs.md examples', () => {
  it.each(readmeExamples(packageDir, '../../docs/migrating/hazeljs.md'))('example $index runs', async (example) => {
    await runReadmeExample(packageDir, example, (file) => import(file));
  });
});
