// Writes contracts/json-schema/<type>.v<version>.json from the zod schemas.
// Run: npm run schemas -w @gatehouse/contracts
import { mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { exportEventJsonSchemas } from '../json-schema.js';

const outDir = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../json-schema');
mkdirSync(outDir, { recursive: true });
for (const { id, schema } of exportEventJsonSchemas()) {
  writeFileSync(path.join(outDir, `${id}.json`), `${JSON.stringify(schema, null, 2)}\n`);
  console.log(`wrote json-schema/${id}.json`);
}
