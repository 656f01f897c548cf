// K3S_VERSION_MISMATCH: the k3s binary in k3s.artifacts must be the release k3s.version names, checked on
// the operator's machine before anything changes (node-baseline's prepare, check mode too). Read-only.
import { open, readFile } from 'node:fs/promises';
import { CauseError } from '../../src/errors.ts';
import { archOfHeader } from '../../src/util/elf-arch.ts';
import { runLocal } from '../../src/local/process.ts';
import { factKey, remembered } from '../../src/util/file-memo.ts';
import { normaliseArch } from './checks.ts';
import type { UpstreamPatterns } from '../../src/causes/upstream-patterns.ts';

/** What the check needs from the operator's machine; injectable for tests. */
export interface VersionDeps {
  /** The binary's first bytes (ELF header or `#!`). */
  head(path: string): Promise<Buffer>;
  /** The whole binary, for the version string linked into it. */
  read(path: string): Promise<Buffer>;
  run(path: string, args: string[]): Promise<{ code: number | null; stdout: string; stderr: string }>;
  /** The operator's OS and CPU, as Node names them ('linux', 'x64'). */
  platform: { os: string; arch: string };
}

export const nodeVersionDeps: VersionDeps = {
  async head(path) {
    const fh = await open(path, 'r');
    try {
      const buf = Buffer.alloc(20);
      const { bytesRead } = await fh.read(buf, 0, 20, 0);
      return buf.subarray(0, bytesRead);
    } finally {
      await fh.close();
    }
  },
  read: (path) => readFile(path),
  // Remembered across runs for this very file (src/util/file-memo.ts): a converged run starts no k3s process here.
  run: (path, args) =>
    remembered(
      factKey(`run ${args.join(' ')}`, path),
      () => runLocal(path, args, 15_000),
      (r) => r.code === 0,
    ),
  platform: { os: process.platform, arch: process.arch },
};

/** `k3s --version`'s first line (k3s-io/k3s pkg/cli/cmds/root.go NewApp: "%s version %s" with Version "<version> (<commit>)"). */
const VERSION_LINE = /^k3s version (v\S+) \(/;
/** A k3s release as it is linked into the binary (k3s-io/k3s scripts/build: -X …/pkg/version.Version=${VERSION}). */
/** @public gathered by test/unit/cause-matchers-exercised.test.ts (src/causes/upstream-patterns.ts) */
export const UPSTREAM_PATTERNS: UpstreamPatterns = { VERSION_LINE };
const EMBEDDED = /v\d+\.\d+\.\d+(?:-rc\d+)?\+k3s\d+/g;

const NODE_ARCH: Record<string, string> = { x64: 'x86_64', arm64: 'aarch64', arm: 'armv7l', riscv64: 'riscv64', ppc64: 'ppc64le', s390x: 's390x' };

interface SeenVersion {
  how: 'ran' | 'embedded';
  /** The version the binary reports, or every release string linked into it. */
  versions: string[];
  command: string;
  /** What `--version` printed, when it ran. */
  output?: string;
}

/**
 * Runs the binary with `--version` when it can run here: a script (the lab's twin is one, and runs
 * anywhere) or an ELF for the operator's own CPU on Linux. Otherwise (an arm64 binary on an amd64
 * laptop, any ELF on macOS) it cannot run, so the version is read from the binary itself: k3s's build
 * links the release as a plain string into the executable (k3s-io/k3s scripts/build VERSIONFLAGS).
 */
async function seenVersion(path: string, expected: string, deps: VersionDeps = nodeVersionDeps): Promise<SeenVersion> {
  const arch = archOfHeader(await deps.head(path));
  const runnable = arch === 'any' || (deps.platform.os === 'linux' && normaliseArch(arch) === NODE_ARCH[deps.platform.arch]);
  if (runnable) {
    const r = await deps.run(path, ['--version']);
    const first = r.stdout.split('\n')[0] ?? '';
    const v = VERSION_LINE.exec(first)?.[1];
    return { how: 'ran', versions: v ? [v] : [], command: `${path} --version`, output: (r.stdout || r.stderr).trim() || `exit ${r.code ?? 'killed'}` };
  }
  const bytes = await deps.read(path);
  const text = bytes.toString('latin1');
  // The expected release, not followed by another digit (v1.33.5+k3s1 must not pass for v1.33.5+k3s10).
  let at = text.indexOf(expected);
  while (at >= 0 && /\d/.test(text[at + expected.length] ?? '')) at = text.indexOf(expected, at + 1);
  if (at >= 0) return { how: 'embedded', versions: [expected], command: `grep -ao '${expected}' ${path}` };
  return {
    how: 'embedded',
    versions: [...new Set(text.match(EMBEDDED) ?? [])].slice(0, 5),
    command: `grep -aoE 'v[0-9]+\\.[0-9]+\\.[0-9]+\\+k3s[0-9]+' ${path}`,
  };
}

export async function versionStops(path: string, expected: string, deps: VersionDeps = nodeVersionDeps): Promise<CauseError[]> {
  const seen = await seenVersion(path, expected, deps);
  if (seen.versions.length === 1 && seen.versions[0] === expected) return [];
  const what =
    seen.how === 'ran'
      ? seen.versions.length
        ? `the k3s binary reports ${seen.versions[0]}, k3s.version is ${expected}`
        : `the k3s binary's --version printed no "k3s version v…" line, k3s.version is ${expected}`
      : seen.versions.length
        ? `the k3s binary (for another platform, not run) carries ${seen.versions.join(', ')}, not ${expected} (k3s.version)`
        : `the k3s binary (for another platform, not run) carries no k3s release string; k3s.version is ${expected}`;
  return [new CauseError('K3S_VERSION_MISMATCH', { message: what, evidence: { command: seen.command, seen: what, excerpt: seen.output } })];
}
