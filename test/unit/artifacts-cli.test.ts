// `bootstrap artifacts <env>` as operators run it (bin/bootstrap.js, a process of its own) against a release
// server on 127.0.0.1: the exit codes of the README's Commands section, the lines it prints, --json, --check,
// and a server that does not answer named as a cause, never a stack trace.
import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { cli, repoRoot } from '../support/cli.ts';
import { artifactServer, type ArtifactServer } from '../support/artifact-server.ts';
import { inventory, releaseEnv, serveRelease } from '../support/artifact-release.ts';

let root: string;
let server: ArtifactServer;
let file: string;

beforeEach(async () => {
  root = mkdtempSync(join(tmpdir(), 'artifacts-cli-'));
  file = join(root, 'lab.yaml');
  writeFileSync(file, inventory());
  server = await artifactServer();
  serveRelease(server);
});
afterEach(async () => {
  await server.close();
  rmSync(root, { recursive: true, force: true });
});

/** The CLI as a child process; asynchronous, so this process's server answers it meanwhile. */
function bootstrap(args: string[], env: NodeJS.ProcessEnv = releaseEnv(server.base)): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, ['bin/bootstrap.js', ...args], { cwd: repoRoot, env: { ...process.env, CI: '', ...env } });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d) => (stdout += d));
    child.stderr.on('data', (d) => (stderr += d));
    child.on('close', (code) => resolve({ code, stdout, stderr }));
  });
}

describe('bootstrap artifacts <env> (the executable)', () => {
  it('downloads, then a rerun finds everything in place; --check then has nothing to do', { timeout: 120_000 }, async () => {
    const first = await bootstrap(['artifacts', 'lab', '--inventory', file]);
    expect(first.stderr).toBe('');
    expect(first.code).toBe(0);
    expect(first.stdout).toMatch(/placed +k3s\.artifacts: the k3s binary: .*k3s \(0\.3 MiB, sha256 verified\)/);
    expect(first.stdout).toContain('artifacts for lab: 0 in place, 4 downloaded');
    expect(existsSync(join(root, 'artifacts/k3s/k3s.sha256'))).toBe(true);

    const again = await bootstrap(['artifacts', 'lab', '--inventory', file]);
    expect(again.code).toBe(0);
    expect(again.stdout).toContain('artifacts for lab: 4 in place, 0 downloaded');
    expect((await bootstrap(['artifacts', 'lab', '--inventory', file, '--check'])).code).toBe(0);
  });

  it('--check says what it would download and exits 2, downloading nothing', async () => {
    const r = await bootstrap(['artifacts', 'lab', '--inventory', file, '--check']);
    expect(r.code).toBe(2);
    expect(r.stdout).toContain(`would download ${server.base}/cilium/cilium-1.19.5.tgz`);
    expect(server.requests).toEqual([]);
  });

  it('--json: one event per line, a 404 as a stopped object, exit 1', async () => {
    server.routes.delete('/flux/v2.6.4/install.yaml');
    const r = await bootstrap(['artifacts', 'lab', '--inventory', file, '--json']);
    expect(r.code).toBe(1);
    const events = r.stdout
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l));
    expect(events.filter((e) => e.type === 'artifact-placed')).toHaveLength(3);
    const stopped = events.filter((e) => e.type === 'stopped');
    expect(stopped.map((e) => e.error.cause)).toEqual(['ARTIFACT_NOT_FOUND']);
    expect(stopped[0].error.evidence.command).toContain(`-o ${join(root, 'artifacts/flux-install.yaml')}.part ${server.base}/flux/v2.6.4/install.yaml`);
  });

  it('offline: every artifact named with what to download and where, exit 1, no stack trace', async () => {
    const base = server.base;
    await server.close();
    const r = await bootstrap(['artifacts', 'lab', '--inventory', file], {
      BOOTSTRAP_K3S_RELEASES: base,
      BOOTSTRAP_CILIUM_CHARTS: base,
      BOOTSTRAP_FLUX_RELEASES: base,
    });
    server = await artifactServer(); // for afterEach
    expect(r.code).toBe(1);
    expect(r.stderr.match(/ARTIFACT_UNREACHABLE/g)?.length).toBeGreaterThanOrEqual(4);
    expect(r.stderr).toContain('connection refused');
    expect(r.stderr).toContain(`curl -fL -C - -o ${join(root, 'artifacts/k3s/k3s')}.part`);
    expect(r.stderr).not.toMatch(/^\s+at /m);
  });
});

describe('bootstrap artifacts: the command line', () => {
  it('needs an environment or --inventory (64), and refuses a missing inventory file as such (65)', async () => {
    expect((await cli(['artifacts'])).code).toBe(64);
    const r = await cli(['artifacts', 'nowhere', '--inventory', join(root, 'nope.yaml')]);
    expect(r.code).toBe(65);
    expect(r.stderr).toContain('the file does not exist');
    expect(r.stderr).not.toMatch(/^\s+at /m);
  });
});
