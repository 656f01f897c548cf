// Writes README.md's fault-matrix table from test/support/fault-matrix.ts (between its markers):
// `node --import tsx scripts/fault-matrix-readme.ts` after changing a row. test/unit/fault-matrix-table.test.ts
// fails while the two differ.
import { readFileSync, writeFileSync } from 'node:fs';
import { README_BEGIN, README_END, readmeTable } from '../test/support/fault-matrix.ts';

const file = new URL('../README.md', import.meta.url);
const readme = readFileSync(file, 'utf8');
const begin = readme.indexOf(README_BEGIN);
const end = readme.indexOf(README_END);
if (begin < 0 || end < begin) throw new Error(`README.md has no ${README_BEGIN} … ${README_END}`);
writeFileSync(file, `${readme.slice(0, begin + README_BEGIN.length)}\n${readmeTable()}\n${readme.slice(end)}`);
