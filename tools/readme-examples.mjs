// Runs the ```ts example blocks of a package README (or of another Markdown file, such as a
// migration guide under docs/), so the documentation cannot rot. Each block is written to
// <package>/src/.readme-examples/ (so the package's imports and Jest's transform apply),
// imported, and must finish without throwing; blocks assert with node:assert. Used by each
// package's readme spec.
import { mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';

/**
 * @param {string} packageDir absolute path of the package
 * @param {string} [markdownFile] the Markdown file, absolute or relative to the package (default: its README.md)
 */
export function readmeExamples(packageDir, markdownFile = 'README.md') {
  const markdown = readFileSync(path.resolve(packageDir, markdownFile), 'utf8');
  return [...markdown.matchAll(/```ts example\n([\s\S]*?)```/g)].map((m, i) => ({ index: i + 1, code: m[1] }));
}

/**
 * @param {string} packageDir absolute path of the package
 * @param {{ index: number, code: string }} example
 * @param {(file: string) => Promise<unknown>} load the spec's own `(f) => import(f)`, so Jest transforms it
 */
export async function runReadmeExample(packageDir, example, load) {
  const dir = path.join(packageDir, 'src', '.readme-examples');
  mkdirSync(dir, { recursive: true });
  const file = path.join(dir, `example-${example.index}-${process.pid}.ts`);
  writeFileSync(file, example.code);
  try {
    await load(file);
  } finally {
    rmSync(file, { force: true });
  }
}
