#!/usr/bin/env node
// `npm run build` (and `prepare`, which `npm ci` runs): bundles the CLI (cli/main.ts and what it imports from
// cli/, modes/, phases/ and src/) into dist/ with esbuild, so `bootstrap` starts without compiling
// TypeScript (issue 17: `bootstrap --help` in 0.3 s at most). The npm packages stay outside the bundle
// (loaded from node_modules as the sources load them), and each command's modules are a chunk of their
// own (cli/main.ts imports them when the command runs), so `--help` loads neither SSH nor the Kubernetes client.
//
// Beside the bundle, stamp.json lists every source file in it with its mtime and size: bin/bootstrap.js
// runs the bundle only while each of them is unchanged (and falls back to the sources through tsx otherwise).
// `node scripts/build.mjs DIR` builds into DIR instead (the unit test and the bench).
import { mkdirSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '..');

/** The npm packages bundled into dist/ (with what they import); every other one is loaded from node_modules. */
const BUNDLED = ['@kubernetes/client-node', 'yaml', 'ajv'];

/** An esbuild plugin: bare imports are external unless they are, or come from inside, one of `bundled`. */
function externalBut(bundled) {
  const inside = (path) => bundled.some((b) => path.includes(`/node_modules/${b}/`));
  return {
    name: 'external-but',
    setup(b) {
      b.onResolve({ filter: /^[^./]/ }, (args) => {
        if (args.path.startsWith('node:')) return { external: true };
        const name = args.path.startsWith('@') ? args.path.split('/').slice(0, 2).join('/') : args.path.split('/')[0];
        if (bundled.includes(name) || inside(args.importer)) return undefined;
        return { external: true };
      });
    },
  };
}

/** Builds the bundle into `outdir`; resolves with the number of source files it holds. */
export async function buildCli(outdir = join(ROOT, 'dist')) {
  // esbuild is a devDependency: imported here so that bin/bootstrap.js never loads it.
  const { build } = await import('esbuild');
  // A source changed while esbuild read it must not be stamped as read: its mtime is then newer than this.
  const startedMs = Date.now();
  rmSync(outdir, { recursive: true, force: true });
  mkdirSync(outdir, { recursive: true });
  const result = await build({
    absWorkingDir: ROOT,
    entryPoints: { main: 'cli/main.ts' },
    bundle: true,
    splitting: true,
    platform: 'node',
    format: 'esm',
    target: 'node20',
    // The npm packages stay in node_modules but three: the Kubernetes client, whose ESM build is about a
    // thousand files that Node takes most of a second to find, read and link (bundled into the chunk of the
    // modules that use it, loaded when a run first writes through the API, it loads in about a fifth of that);
    // and yaml and ajv, which every run loads as some hundred CommonJS files (about 0.15 s of CPU before the
    // first connection; bundled, half of it). ssh2 stays out: it loads a native binding when one is built.
    plugins: [externalBut(BUNDLED)],
    // A CommonJS module inside the bundled client calls require: ESM has none of its own.
    banner: { js: "import { createRequire as __bootstrapRequire } from 'node:module'; const require = __bootstrapRequire(import.meta.url);" },
    outdir,
    metafile: true,
    logLevel: 'warning',
  });
  const inputs = {};
  // tsconfig.json too: esbuild reads its compiler options (class fields, decorators) for every file.
  // The bundled packages' files are not stamped: they change only with `npm ci`, which builds again.
  const sources = Object.keys(result.metafile.inputs).filter((f) => !f.split('/').includes('node_modules'));
  for (const file of [...sources, 'tsconfig.json']) {
    const st = statSync(join(ROOT, file));
    // -1 never matches a real mtime: a file written during the build keeps the bundle stale until the next one.
    inputs[relative(ROOT, join(ROOT, file))] = [st.mtimeMs >= startedMs ? -1 : st.mtimeMs, st.size];
  }
  writeFileSync(join(outdir, 'stamp.json'), JSON.stringify({ entry: 'main.js', inputs }) + '\n');
  return Object.keys(inputs).length;
}

if (process.argv[1] && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const outdir = process.argv[2] ? resolve(process.argv[2]) : undefined;
  try {
    const n = await buildCli(outdir);
    process.stdout.write(`bundled the CLI (${n} source files) into ${relative(process.cwd(), outdir ?? join(ROOT, 'dist')) || '.'}\n`);
  } catch (err) {
    // `npm ci --omit=dev` has no esbuild: bootstrap then runs the sources through tsx, as it did before the bundle.
    if (err?.code === 'ERR_MODULE_NOT_FOUND' && /esbuild/.test(err.message)) {
      process.stderr.write('build: esbuild is not installed (npm ci --omit=dev?): bootstrap runs its TypeScript sources through tsx\n');
    } else {
      throw err;
    }
  }
}
