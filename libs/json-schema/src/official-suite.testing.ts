// Where the specs find the official JSON-Schema-Test-Suite (the copy under fixtures/), shared by
// the suite's own spec and the fast-path spec, which runs the same cases through both paths.
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { type JsonValue } from '@gatehouse/contracts';
import { type Draft } from './index.js';

export const SUITE_DIR = path.join(import.meta.dirname, 'fixtures', 'json-schema-test-suite');
/** The suite's folder per draft, and the draft it is. */
export const SUITE_DRAFTS: Readonly<Record<string, Draft>> = { draft4: '4', draft7: '7', 'draft2019-09': '2019-09', 'draft2020-12': '2020-12' };
const REMOTE_BASE = 'http://localhost:1234/';

/** The suite's remote schemas by the URL its cases refer to them with. */
export function suiteRemotes(): Record<string, JsonValue> {
  const dir = path.join(SUITE_DIR, 'remotes');
  const found: Record<string, JsonValue> = {};
  if (!existsSync(dir)) return found;
  for (const entry of readdirSync(dir, { recursive: true, withFileTypes: true })) {
    if (!entry.isFile() || !entry.name.endsWith('.json')) continue;
    const file = path.join(entry.parentPath, entry.name);
    found[REMOTE_BASE + path.relative(dir, file).split(path.sep).join('/')] = JSON.parse(readFileSync(file, 'utf8')) as JsonValue;
  }
  return found;
}
