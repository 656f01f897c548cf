// The ground floor (everything under src/ but the CLI: engine, transport, inventory, causes, view, backup,
// kube, k3s, util, …) imports nothing above it: no phase, no CLI, no lab, no test code. A file that does
// fails here with the import it makes, so the layering cannot rot unnoticed.
import { readdirSync, readFileSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { describe, expect, it } from 'vitest';
import { repoRoot } from '../support/cli.ts';

/** Every .ts file under `dir`, repository-relative. */
function files(dir: string): string[] {
  return readdirSync(join(repoRoot, dir), { withFileTypes: true }).flatMap((e) =>
    e.isDirectory() ? files(join(dir, e.name)) : e.name.endsWith('.ts') ? [join(dir, e.name)] : [],
  );
}

/** The relative specifiers a file imports (static, type-only, re-exports and dynamic imports alike). */
function importsOf(text: string): string[] {
  const found = [...text.matchAll(/(?:\bfrom\s+|\bimport\s*\(\s*|^\s*import\s+)['"](\.{1,2}\/[^'"]+)['"]/gm)];
  return found.map((m) => m[1]);
}

const ABOVE = ['phases/', 'lab/', 'test/', 'scripts/', 'bin/', 'src/cli/'];

describe('import boundaries', () => {
  it('reads every kind of import', () => {
    expect(importsOf(`import { a } from '../x.ts';\nimport type { B } from "./y.ts";\nexport { c } from '../../z.ts';\nconst m = await import('./w.ts');\nimport './side.ts';`)).toEqual([
      '../x.ts',
      './y.ts',
      '../../z.ts',
      './w.ts',
      './side.ts',
    ]);
  });

  it('the ground floor imports no layer above it', () => {
    const ground = files('src').filter((f) => !f.startsWith('src/cli/'));
    expect(ground.length).toBeGreaterThan(50);
    const breaks = ground.flatMap((f) =>
      importsOf(readFileSync(join(repoRoot, f), 'utf8'))
        .map((spec) => relative(repoRoot, resolve(repoRoot, dirname(f), spec)))
        .filter((target) => ABOVE.some((a) => target.startsWith(a)))
        .map((target) => `${f} imports ${target}`),
    );
    expect(breaks).toEqual([]);
  });
});
