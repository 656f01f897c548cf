// The lab fault matrix's table (test/support/fault-matrix.ts) is what README.md shows, row for row, and
// every row names a cause of the catalogue, a budget and a heal.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { isCauseId } from '../../src/causes/catalogue.ts';
import { FAULT_ROWS, README_BEGIN, README_END, readmeTable } from '../support/fault-matrix.ts';
import { repoRoot } from '../support/cli.ts';
import { allPhases } from '../../phases/index.ts';

describe('the lab fault matrix table', () => {
  it("is README.md's table, between its markers", () => {
    const readme = readFileSync(join(repoRoot, 'README.md'), 'utf8');
    const begin = readme.indexOf(README_BEGIN);
    const end = readme.indexOf(README_END);
    expect(begin, `README.md has no ${README_BEGIN}`).toBeGreaterThan(-1);
    expect(readme.slice(begin + README_BEGIN.length, end).trim(), "README.md's table differs: run node --import tsx scripts/fault-matrix-readme.ts").toBe(
      readmeTable(),
    );
  });

  it('holds at least 20 rows, each with its own id, a catalogued cause, a budget and a heal', () => {
    expect(FAULT_ROWS.length).toBeGreaterThanOrEqual(20);
    expect(new Set(FAULT_ROWS.map((r) => r.id)).size).toBe(FAULT_ROWS.length);
    for (const r of FAULT_ROWS) {
      expect(isCauseId(r.cause), r.id).toBe(true);
      expect(Number.isFinite(r.budgetMs) && r.budgetMs >= 0, r.id).toBe(true);
      expect(r.heal.length, r.id).toBeGreaterThan(0);
      if (r.budgetFromGate) {
        // Put in before the gate: before the run or as it starts, at the start of an earlier gate, or at the
        // start of the gate's own phase or of one of its steps (a phase's steps run before its gates).
        const t = r.trigger;
        const ownPhase = allPhases().find((p) => (p.gates ?? []).some((g) => g.id === r.budgetFromGate));
        const before =
          t.at === 'before' || t.at === 'run-start' || t.at === 'gate-start' || ((t.at === 'step-start' || t.at === 'phase-start') && t.phase === ownPhase?.id);
        expect(before, `${r.id}: a gate's budget counts from a fault put in before it`).toBe(true);
      }
    }
  });

  it('runs every row: a row of another lab file is named there (runFaultRow with its id)', () => {
    for (const r of FAULT_ROWS.filter((x) => x.file)) {
      const text = readFileSync(join(repoRoot, r.file!), 'utf8');
      expect(text, `${r.file} does not run row ${r.id}`).toContain(`'${r.id}'`);
      expect(text, `${r.file} does not run row ${r.id}`).toContain('runFaultRow(');
    }
  });

  it('renders each row once, with its cause and budget in seconds', () => {
    const table = readmeTable().split('\n');
    expect(table).toHaveLength(FAULT_ROWS.length + 2);
    expect(table[2]).toContain(`\`${FAULT_ROWS[0].cause}\``);
    expect(table[2]).toContain(`${FAULT_ROWS[0].budgetMs / 1000} s`);
  });
});
