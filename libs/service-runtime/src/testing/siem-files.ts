import { existsSync, readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';

// What audit-export's file sink wrote, as a SIEM reads it: `ocsf-p<partition>.<n>.jsonl`, one OCSF
// line per record, `metadata.uid` the record's event id. Here, not in the service, because the
// system tests may not import a service and both they and the service's benchmarks check it.

/** Every `metadata.uid` of the OCSF files in `dir`, a line each (none when nothing was written). Read only once the export acknowledged what it should hold. */
export function ocsfFileIds(dir: string): string[] {
  if (!existsSync(dir)) return [];
  return readdirSync(dir)
    .filter((f) => f.startsWith('ocsf-') && f.endsWith('.jsonl'))
    .flatMap((f) => readFileSync(path.join(dir, f), 'utf8').split('\n'))
    .filter((line) => line.length > 0)
    .map((line) => (JSON.parse(line) as { metadata: { uid: string } }).metadata.uid);
}

/** Ids seen more than once in `ids`, with their counts. */
export function duplicateIds(ids: readonly string[]): Record<string, number> {
  const counts = new Map<string, number>();
  for (const id of ids) counts.set(id, (counts.get(id) ?? 0) + 1);
  return Object.fromEntries([...counts].filter(([, n]) => n > 1));
}
