// Regenerates inventory/schema.json from schema.ts: `npx tsx src/inventory/write-schema.ts`.
import { writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { renderSchemaFile } from './schema.ts';

const target = fileURLToPath(new URL('../../inventory/schema.json', import.meta.url));
writeFileSync(target, renderSchemaFile());
