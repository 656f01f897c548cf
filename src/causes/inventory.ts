import { defineCauses } from './define.ts';

// Contracts of the inventory file, checked before any connection (src/inventory/contracts.ts).
export const inventoryCauses = defineCauses({
  INVENTORY_SCHEMA: {
    title: 'The inventory does not match the schema',
    meaning: 'A key is unknown, a value has the wrong type, or a required field is missing.',
    remedy: 'Fix the key at the path named; inventory/schema.json describes every field (editors can validate with it).',
  },
});
