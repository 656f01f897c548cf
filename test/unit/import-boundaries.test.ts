// The layers, checked file by file, top down: the CLI (cli/) parses, calls a mode and renders, and imports
// no phase; the modes (modes/) assemble each kind of run from the phases; the phases import no mode and no
// CLI, and no phase unit imports another (they share the libraries, phases/steps and the DAG in
// phases/index.ts); the ground floor (everything under src/: engine, transport, inventory, causes, view,
// backup, kube, k3s, gitops, images, util, …) imports nothing above it; and no import cycle exists among
// src/, phases/, modes/ and cli/. A file that breaks a rule fails here with the
// import it makes (or the cycle, file by file), so the layering cannot rot unnoticed.
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join, posix } from 'node:path';
import { describe, expect, it } from 'vitest';
import { repoRoot } from '../support/cli.ts';

/** Every .ts file under `dir`, repository-relative with `/` (none when the folder does not exist). */
function files(dir: string): string[] {
  if (!existsSync(join(repoRoot, dir))) return [];
  return readdirSync(join(repoRoot, dir), { withFileTypes: true }).flatMap((e) =>
    e.isDirectory() ? files(`${dir}/${e.name}`) : e.name.endsWith('.ts') ? [`${dir}/${e.name}`] : [],
  );
}

/** The relative specifiers a file imports (static, type-only, re-exports and dynamic imports alike). */
function importsOf(text: string): string[] {
  const found = [...text.matchAll(/(?:\bfrom\s+|\bimport\s*\(\s*|^\s*import\s+)['"](\.{1,2}\/[^'"]+)['"]/gm)];
  return found.map((m) => m[1]);
}

/** Each file's imports as repository-relative paths. */
type Graph = Map<string, string[]>;
function graphOf(sources: Record<string, string>): Graph {
  return new Map(Object.entries(sources).map(([f, text]) => [f, importsOf(text).map((spec) => posix.normalize(posix.join(posix.dirname(f), spec)))]));
}
function readGraph(dirs: string[]): Graph {
  return graphOf(Object.fromEntries(dirs.flatMap(files).map((f) => [f, readFileSync(join(repoRoot, f), 'utf8')])));
}

const ABOVE = ['phases/', 'modes/', 'cli/', 'lab/', 'test/', 'scripts/', 'bin/'];

/** Files of `layer` importing one of `above`. */
function layerBreaks(g: Graph, layer: string, above: string[]): string[] {
  return [...g]
    .filter(([f]) => f.startsWith(layer))
    .flatMap(([f, targets]) => targets.filter((t) => above.some((a) => t.startsWith(a))).map((t) => `${f} imports ${t}`));
}

/** Ground-floor files (everything under src/) importing a layer above. */
const groundBreaks = (g: Graph) => layerBreaks(g, 'src/', ABOVE);
/** The CLI calls a mode, which names the phases: a CLI file importing a phase file. */
const cliBreaks = (g: Graph) => layerBreaks(g, 'cli/', ['phases/']);
/** Phase files importing a mode or the CLI. */
const phaseBreaks = (g: Graph) => layerBreaks(g, 'phases/', ['modes/', 'cli/']);

/**
 * The phase unit a file belongs to, or undefined for what every unit may import (phases/steps/, the DAG
 * in phases/index.ts) and for what is no phase. k3s is one unit with its phases (founder, join, agents, the rolling change, the removal).
 */
function phaseUnit(file: string): string | undefined {
  if (!file.startsWith('phases/') || file.startsWith('phases/steps/') || file === 'phases/index.ts') return undefined;
  const top = file.slice('phases/'.length).split('/')[0].replace(/\.ts$/, '');
  return ({ 'k3s-founder': 'k3s', 'k3s-join': 'k3s', 'k3s-rolling': 'k3s', 'k3s-remove': 'k3s', agents: 'k3s' } as Record<string, string>)[top] ?? top;
}

function sideways(g: Graph): string[] {
  return [...g].flatMap(([f, targets]) =>
    targets.filter((t) => phaseUnit(f) && phaseUnit(t) && phaseUnit(f) !== phaseUnit(t)).map((t) => `${f} (${phaseUnit(f)}) imports ${t} (${phaseUnit(t)})`),
  );
}

/** Every import cycle, each as the files around it (`a → b → a`), found by a depth-first search. */
function cycles(g: Graph): string[] {
  const state = new Map<string, 'open' | 'done'>();
  const path: string[] = [];
  const found: string[] = [];
  const visit = (f: string) => {
    state.set(f, 'open');
    path.push(f);
    for (const t of g.get(f) ?? []) {
      if (!g.has(t)) continue;
      if (state.get(t) === 'open') found.push([...path.slice(path.indexOf(t)), t].join(' → '));
      else if (!state.has(t)) visit(t);
    }
    path.pop();
    state.set(f, 'done');
  };
  for (const f of [...g.keys()].sort()) if (!state.has(f)) visit(f);
  return found;
}

describe('import boundaries', () => {
  it('reads every kind of import', () => {
    expect(
      importsOf(
        `import { a } from '../x.ts';\nimport type { B } from "./y.ts";\nexport { c } from '../../z.ts';\nconst m = await import('./w.ts');\nimport './side.ts';`,
      ),
    ).toEqual(['../x.ts', './y.ts', '../../z.ts', './w.ts', './side.ts']);
  });

  it('each check fails on what it forbids', () => {
    const g = graphOf({
      'src/engine/a.ts': `import { b } from './b.ts';\nimport type { P } from '../../phases/k3s/render.ts';`,
      'src/engine/b.ts': `import type { A } from './a.ts';`,
      'phases/verify/checks.ts': `import { KUBE_VIP_LEASE } from '../kube-vip/render.ts';\nimport { step } from '../steps/managed-file.ts';\nimport { allPhases } from '../index.ts';`,
      'phases/k3s-join.ts': `import { TOKEN_NOT_YET } from './k3s-founder.ts';\nimport { kubectl } from './k3s/gates.ts';`,
      'phases/k3s-founder.ts': `import { prepareToken } from '../src/k3s/token.ts';\nimport { lastBuiltPhase } from '../modes/compose.ts';`,
      'cli/run-command.ts': `import { buildRun } from '../modes/build.ts';\nimport { allPhases } from '../phases/index.ts';`,
    });
    expect(groundBreaks(g)).toEqual(['src/engine/a.ts imports phases/k3s/render.ts']);
    expect(cliBreaks(g)).toEqual(['cli/run-command.ts imports phases/index.ts']);
    expect(phaseBreaks(g)).toEqual(['phases/k3s-founder.ts imports modes/compose.ts']);
    expect(sideways(g)).toEqual(['phases/verify/checks.ts (verify) imports phases/kube-vip/render.ts (kube-vip)']);
    expect(cycles(g)).toEqual(['src/engine/a.ts → src/engine/b.ts → src/engine/a.ts']);
  });

  it('the ground floor imports no layer above it', () => {
    const g = readGraph(['src']);
    expect(g.size).toBeGreaterThan(50);
    expect(groundBreaks(g)).toEqual([]);
  });

  it('the CLI imports no phase: it calls a mode', () => {
    const g = readGraph(['cli']);
    expect(g.size).toBeGreaterThan(5);
    expect(cliBreaks(g)).toEqual([]);
  });

  it('the phases import no mode and no CLI', () => {
    const g = readGraph(['phases']);
    expect(g.size).toBeGreaterThan(50);
    expect(phaseBreaks(g)).toEqual([]);
  });

  it('no phase unit imports another', () => {
    const g = readGraph(['phases']);
    expect(new Set([...g.keys()].map(phaseUnit))).toEqual(new Set([undefined, 'node-baseline', 'k3s', 'kube-vip', 'cilium', 'verify', 'flux', 'backup']));
    expect(sideways(g)).toEqual([]);
  });

  it('no import cycle among src/, phases/, modes/ and cli/', () => {
    expect(cycles(readGraph(['src', 'phases', 'modes', 'cli']))).toEqual([]);
  });
});
