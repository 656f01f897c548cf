// The layers, top down: the CLI (cli/) parses, calls a mode and renders; the modes (modes/) assemble each
// kind of run from the phases; the phases (phases/); the ground floor (everything under src/: engine,
// transport, inventory, causes, view, backup, kube, k3s, util, …). A layer imports only layers below it:
// the ground floor no mode, phase, CLI, lab or test code; the CLI no phase (a mode names them); the phases
// no mode and no CLI. A file that breaks that fails here with the import it makes, so the layering cannot
// rot unnoticed.
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

/** `layer`'s imports that land in one of `above`, as "file imports target". */
function breaks(layer: string, above: string[]): string[] {
  return files(layer).flatMap((f) =>
    importsOf(readFileSync(join(repoRoot, f), 'utf8'))
      .map((spec) => relative(repoRoot, resolve(repoRoot, dirname(f), spec)))
      .filter((target) => above.some((a) => target.startsWith(a)))
      .map((target) => `${f} imports ${target}`),
  );
}

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
    expect(files('src').length).toBeGreaterThan(50);
    expect(breaks('src', ['cli/', 'modes/', 'phases/', 'lab/', 'test/', 'scripts/', 'bin/'])).toEqual([]);
  });

  it('the CLI imports no phase: it calls a mode', () => {
    expect(files('cli').length).toBeGreaterThan(5);
    expect(breaks('cli', ['phases/'])).toEqual([]);
  });

  it('the phases import no mode and no CLI', () => {
    expect(files('phases').length).toBeGreaterThan(50);
    expect(breaks('phases', ['modes/', 'cli/'])).toEqual([]);
  });
});
