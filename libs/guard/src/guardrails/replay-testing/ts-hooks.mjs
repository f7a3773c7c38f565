// Module hooks for register-ts.mjs: a relative `./x.js` import of a source file resolves to `./x.ts`
// (the sources import by their built names), and `.ts` files are compiled by @swc/core on load.
import { readFile } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';
import swc from '@swc/core';

const relative = (specifier) => specifier.startsWith('./') || specifier.startsWith('../') || specifier.startsWith('file:');

export async function resolve(specifier, context, next) {
  try {
    return await next(specifier, context);
  } catch (error) {
    if (relative(specifier) && specifier.endsWith('.js') && context.parentURL?.endsWith('.ts')) return next(`${specifier.slice(0, -3)}.ts`, context);
    throw error;
  }
}

export async function load(url, context, next) {
  if (!url.startsWith('file:') || !url.endsWith('.ts')) return next(url, context);
  const filename = fileURLToPath(url);
  const { code } = await swc.transform(await readFile(filename, 'utf8'), {
    filename,
    jsc: { parser: { syntax: 'typescript' }, target: 'es2023' },
    module: { type: 'es6' },
    sourceMaps: 'inline',
  });
  return { format: 'module', source: code, shortCircuit: true };
}
