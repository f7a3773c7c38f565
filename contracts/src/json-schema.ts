import { z } from 'zod';
import { eventIdentity } from './codec.js';
import { TOPIC_LIST } from './topics.js';

export interface ExportedEventSchema {
  /** `<type>.v<version>`, also the file name stem under `contracts/json-schema/`. */
  readonly id: string;
  readonly topic: string;
  readonly schema: Record<string, unknown>;
}

/**
 * JSON Schema (draft 2020-12) of every event in the catalog, for consumers that do
 * not use TypeScript (a SIEM team). Describes the event as written to the log.
 */
export function exportEventJsonSchemas(): ExportedEventSchema[] {
  const out: ExportedEventSchema[] = [];
  for (const topic of TOPIC_LIST) {
    for (const schema of topic.events) {
      const { type, version } = eventIdentity(schema);
      const id = `${type}.v${version}`;
      const json = z.toJSONSchema(schema, { target: 'draft-2020-12', io: 'output', unrepresentable: 'throw' });
      out.push({
        id,
        topic: topic.name,
        schema: { ...json, $id: `https://gatehouse.dev/schemas/${id}.json`, title: `${type} v${version}` },
      });
    }
  }
  return out;
}
