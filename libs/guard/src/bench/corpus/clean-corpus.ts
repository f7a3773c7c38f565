// The clean corpus: ordinary code and configuration of the kind gatehouse ships (TypeScript,
// lock files, manifests, migrations, bundles, embedded images), with no PII and no secrets.
// The files live beside this module in ./clean; half are written by hand, half by
// generate-clean-corpus.mjs. Read from the source tree, also when run from dist.
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

/** One corpus file: its path under clean/ (with `/`) and its text. */
export interface CorpusFile {
  readonly path: string;
  readonly text: string;
}

/** The directory of the clean corpus, from src/bench/corpus or dist/bench/corpus alike. */
export function cleanCorpusDirectory(): string {
  const here = path.dirname(fileURLToPath(import.meta.url));
  const candidates = [path.join(here, 'clean'), path.join(here, '..', '..', '..', 'src', 'bench', 'corpus', 'clean')];
  const found = candidates.find((dir) => existsSync(dir));
  if (found === undefined) throw new Error('clean corpus: directory src/bench/corpus/clean not found');
  return found;
}

/** Every file of the clean corpus, sorted by path. */
export function readCleanCorpus(directory = cleanCorpusDirectory()): readonly CorpusFile[] {
  const files: CorpusFile[] = [];
  const walk = (dir: string) => {
    for (const entry of readdirSync(dir, { withFileTypes: true })) {
      const full = path.join(dir, entry.name);
      if (entry.isDirectory()) walk(full);
      else files.push({ path: path.relative(directory, full).split(path.sep).join('/'), text: readFileSync(full, 'utf8') });
    }
  };
  walk(directory);
  return files.sort((a, b) => (a.path < b.path ? -1 : a.path > b.path ? 1 : 0));
}
