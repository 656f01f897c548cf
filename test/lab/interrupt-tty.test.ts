// Ctrl-C on a terminal, as an operator presses it: the run is started under a pseudo-terminal (util-linux
// `script`, in every Debian system), so listr2 draws its terminal renderer and the line discipline turns the
// typed ^C into SIGINT for the whole foreground process group — the case that once exited at once with 127
// through the renderer's own handler and left every host lock behind.
import { spawn } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { bootstrap, freshStateDir, resetCluster, stopOf } from '../support/cluster.ts';
import { repoRoot } from '../support/cli.ts';
import { secretLeaks } from '../support/secret-scan.ts';
import { describeAsRoot } from '../support/env.ts';
import { LOCK_DIR } from '../../src/engine/lock.ts';
import { ensureLab, hostExec, hosts, paths } from '../support/lab.ts';

interface TtyRun {
  code: number | null;
  /** What the terminal showed (escape sequences removed). */
  screen: string;
  /** ms from the last ^C typed to the process's end. */
  afterLastInterruptMs: number;
}

const plain = (s: string) => s.replace(/\x1b\[[0-9;?]*[A-Za-z]/g, '').replace(/\r/g, '');

/** `bootstrap lab ARGS` on a terminal; types ^C `presses` times (300 ms apart) once `when` shows on the screen. */
function onTerminal(args: string[], stateDir: string, when: RegExp, presses: number): Promise<TtyRun> {
  // A terminal has a size (script's pty has none without one around it): 120 × 40, as a small window.
  const cmd = `stty cols 120 rows 40; exec ${[process.execPath, join(repoRoot, 'bin/bootstrap.js'), 'lab', '--inventory', paths.inventory, ...args].map((a) => `'${a}'`).join(' ')}`;
  const env: NodeJS.ProcessEnv = { ...process.env, BOOTSTRAP_STATE_DIR: stateDir, TERM: 'xterm-256color' };
  delete env.CI; // CI=true chooses plain lines; an operator's terminal gets the listr2 renderer
  const child = spawn('script', ['-qfec', cmd, '/dev/null'], { cwd: repoRoot, env, stdio: ['pipe', 'pipe', 'pipe'] });
  let screen = '';
  let typed = false;
  let lastPress = 0;
  const press = async () => {
    for (let i = 0; i < presses; i++) {
      if (i) await new Promise((r) => setTimeout(r, 300));
      child.stdin.write('\x03');
      lastPress = Date.now();
    }
  };
  child.stdout.on('data', (d: Buffer) => {
    screen += d;
    if (!typed && when.test(plain(screen))) {
      typed = true;
      void press();
    }
  });
  child.stderr.on('data', (d: Buffer) => (screen += d));
  const timer = setTimeout(() => child.kill('SIGKILL'), 180_000);
  return new Promise((resolve, reject) =>
    child.on('close', (code) => {
      clearTimeout(timer);
      child.stdin.destroy();
      const afterLastInterruptMs = lastPress ? Date.now() - lastPress : -1;
      // The terminal (stdout and stderr merged by the pty; as drawn and without escapes) and the run logs, as every lab run.
      let leaks: string[];
      try {
        leaks = secretLeaks({ stdout: screen, stderr: plain(screen) }, stateDir, paths.inventory);
      } catch (err) {
        reject(err);
        return;
      }
      if (leaks.length) reject(new Error(`the run leaked secrets:\n${leaks.join('\n')}`));
      else resolve({ code, screen: plain(screen), afterLastInterruptMs });
    }),
  );
}

/** The hosts that still hold the run lock (the engine's lock folder under /run on each host). */
async function locked(): Promise<string[]> {
  const held: string[] = [];
  for (const h of hosts()) {
    const r = await hostExec(h.name, `test -e ${LOCK_DIR} && echo held || echo free`);
    if (r.stdout.trim() === 'held') held.push(h.name);
  }
  return held;
}

describeAsRoot('Ctrl-C on a terminal', () => {
  const stateDir = freshStateDir();

  // From "k3s never installed", whatever the file before left: the founder must be installing when Ctrl-C comes
  // (on a running cluster with this fresh state folder the run would stop first, STATE_TOKEN_MISMATCH).
  beforeAll(async () => {
    await ensureLab();
    await resetCluster();
  });

  // The interrupted founder is half-built: the next file starts from "k3s never installed".
  afterAll(async () => {
    await resetCluster();
  });

  it('the first cancels: exit 130, the reason on screen, no host lock left, the journal unfinished, and the next run is not refused', async () => {
    // Pressed once node-baseline is done and k3s-founder runs (its spinner is on screen): the founder's steps end or abort, the run
    // stops at that boundary, and k3s-join never starts.
    const run = await onTerminal(['--until', 'k3s-join'], stateDir, /[⠋⠙⠹⠸⠼⠴⠦⠧⠇⠏] k3s-founder/, 1);
    expect(run.code, run.screen).toBe(130);
    expect(run.screen).toContain('interrupt: finishing the current command, releasing locks');
    expect(await locked()).toEqual([]);
    const journal = join(stateDir, 'lab', 'journal.json');
    expect(existsSync(journal), `no journal at ${journal}`).toBe(true);
    const written = JSON.parse(readFileSync(journal, 'utf8'));
    expect(written.finished).toBe(false);
    expect(Object.keys(written.completed)).toContain('node-baseline');
    expect(Object.keys(written.completed)).not.toContain('k3s-join');
    const next = await bootstrap(['--until', 'node-baseline', '--json'], { stateDir });
    expect(stopOf(next), next.stdout).toBeUndefined();
    expect(next.code).toBe(0);
  });

  it('the second exits at once, with 130 too', async () => {
    const run = await onTerminal(['--until', 'k3s-join'], stateDir, /[⠋⠙⠹⠸⠼⠴⠦⠧⠇⠏] k3s-founder/, 2);
    expect(run.code, run.screen).toBe(130);
    expect(run.afterLastInterruptMs).toBeGreaterThanOrEqual(0);
    expect(run.afterLastInterruptMs).toBeLessThan(2_000);
    // The second press does not wait for the locks to be released: a lock left behind names the
    // interrupted run (LOCK_HELD) until its record goes stale (10 minutes, src/engine/lock.ts). The test
    // heals what an operator would simply wait out.
    const next = await bootstrap(['--until', 'node-baseline', '--json'], { stateDir });
    if (next.code !== 0) expect(stopOf(next)?.cause, next.stdout).toBe('LOCK_HELD');
    for (const h of hosts()) await hostExec(h.name, `rm -rf ${LOCK_DIR}`);
  });
});
