import { z } from 'zod';
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
      const shape = (schema as unknown as z.ZodObject).shape as Record<string, z.ZodType>;
      const type = (shape['type'] as z.ZodLiteral<string>).value;
      const version = (shape['version'] as z.ZodLiteral<number>).value;
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
