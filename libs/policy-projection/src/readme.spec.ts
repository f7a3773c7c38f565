import { describe, it } from '@jest/globals';
import path from 'node:path';
import { readmeExamples, runReadmeExample } from '../../../tools/readme-examples.mjs';

const packageDir = path.resolve(import.meta.dirname, '..');

describe('README examples', () => {
  it.each(readmeExamples(packageDir))('example $index runs', async (example) => {
    await runReadmeExample(packageDir, example, (file) => import(file));
  });
});
