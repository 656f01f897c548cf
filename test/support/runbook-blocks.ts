// Runbook commands that the lab tests run, so a runbook cannot rot.
//
// THE MARKER. A fenced code block whose info string is `sh lab` (optionally followed by a block name) is a
// command an operator types, and a lab test runs it as written:
//
//     ```sh lab replace
//     bootstrap <env> --replace <server>
//     ```
//
// Any other fence (```sh, ```text, ```) is for reading only. A runbook says this in one line near its top
// so that a writer knows which blocks a test will run.
//
// PLACEHOLDERS are `<word>` (lower case, digits and `-`): `<env>`, `<server>`, `<survivor>`… The test
// names each value; a placeholder left without one fails the test (a runbook that grew a new placeholder
// must be taught to its test, not silently run with `<server>` in it).
//
// THE SHELL. Blocks run with `bash -eo pipefail` (the first failing command ends the block, as it would
// stop an operator), in a working folder where `inventory/<env>.yaml` is the test's inventory (what
// `bootstrap <env>` reads in the operator's checkout). `bootstrap` is a shell function that runs this
// checkout's CLI; `ssh` carries the lab's key and known_hosts with strict host key checking (and, in the
// bastion lab, the jump through the bastion, as an operator's ~/.ssh/config would carry a ProxyJump), so
// `ssh ops@<address> …` in a runbook reaches a lab host exactly as the operator's ssh reaches theirs.
import { spawn } from 'node:child_process';
import { mkdirSync, mkdtempSync, symlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { repoRoot } from './cli.ts';
import { secretLeaks } from './secret-scan.ts';

export interface RunbookBlock {
  /** The word after `sh lab` in the info string, if any. */
  name?: string;
  /** 1-based line of the opening fence (for messages). */
  line: number;
  code: string;
}

const FENCE = /^(\s*)(`{3,}|~{3,})\s*(.*)$/;

/** Every `sh lab` block of a markdown text, in document order. */
export function labBlocks(markdown: string): RunbookBlock[] {
  const lines = markdown.split('\n');
  const blocks: RunbookBlock[] = [];
  for (let i = 0; i < lines.length; i++) {
    const open = FENCE.exec(lines[i]);
    if (!open) continue;
    const [, indent, fence, info] = open;
    // The block ends at a fence of the same character, at least as long, with nothing after it.
    let end = i + 1;
    while (end < lines.length && !isClosing(lines[end], fence)) end++;
    const words = info.trim().split(/\s+/);
    if (words[0] === 'sh' && words[1] === 'lab') {
      const body = lines.slice(i + 1, end).map((l) => (l.startsWith(indent) ? l.slice(indent.length) : l));
      blocks.push({ name: words[2], line: i + 1, code: body.join('\n') });
    }
    i = end;
  }
  return blocks;
}

function isClosing(line: string, fence: string): boolean {
  const t = line.trim();
  return t.length >= fence.length && t[0] === fence[0] && /^(`+|~+)$/.test(t);
}

/** The one `sh lab <name>` block (a runbook that lost it, or has it twice, fails the test that needs it). */
export function labBlock(markdown: string, name: string): RunbookBlock {
  const found = labBlocks(markdown).filter((b) => b.name === name);
  if (found.length !== 1) throw new Error(`expected exactly one \`sh lab ${name}\` block, found ${found.length}`);
  return found[0];
}

const PLACEHOLDER = /<([a-z][a-z0-9-]*)>/g;

/** The placeholders a block uses, each once, in order of appearance. */
export function placeholders(code: string): string[] {
  return [...new Set([...code.matchAll(PLACEHOLDER)].map((m) => m[1]))];
}

/** The block with every placeholder replaced; throws naming the ones without a value. */
export function substitute(code: string, values: Record<string, string>): string {
  const missing = placeholders(code).filter((p) => !(p in values));
  if (missing.length) throw new Error(`no value for ${missing.map((p) => `<${p}>`).join(', ')}`);
  return code.replace(PLACEHOLDER, (_, p: string) => values[p]);
}

export interface BlockRun {
  code: number | null;
  stdout: string;
  stderr: string;
  /** The command text that ran (placeholders replaced). */
  script: string;
}

export interface BlockEnv {
  /** `<env>` and the environment `bootstrap <env>` finds as inventory/<env>.yaml. */
  env: string;
  /** The inventory file for that environment. */
  inventory: string;
  /** BOOTSTRAP_STATE_DIR for the CLI (token, kubeconfig, journal). */
  stateDir: string;
  /** Values for the other placeholders (`<env>` is filled from env). */
  values?: Record<string, string>;
  /** For `ssh`: the operator key and known_hosts, and options that jump through a bastion. */
  ssh?: { identityFile: string; knownHostsFile: string; jump?: string[] };
  timeoutMs?: number;
}

/** The shell prelude: `bootstrap` and `ssh` as an operator has them. */
function prelude(e: Pick<BlockEnv, 'ssh'>): string {
  const cli = join(repoRoot, 'bin', 'bootstrap.js');
  const lines = [`bootstrap() { ${q(process.execPath)} ${q(cli)} "$@"; }`];
  if (e.ssh) {
    const opts = [
      '-i',
      e.ssh.identityFile,
      '-o',
      `UserKnownHostsFile=${e.ssh.knownHostsFile}`,
      '-o',
      'StrictHostKeyChecking=yes',
      '-o',
      'BatchMode=yes',
      '-o',
      'ConnectTimeout=10',
      ...(e.ssh.jump ?? []),
    ];
    lines.push(`ssh() { command ssh ${opts.map(q).join(' ')} "$@"; }`);
  }
  return lines.join('\n');
}

const q = (s: string) => `'${s.replaceAll("'", `'\\''`)}'`;

/**
 * Runs one block through bash against the lab; resolves with what the operator would see, or rejects when
 * that or a run log leaked a secret of the environment (test/support/secret-scan.ts, as every lab run).
 */
export function runBlock(block: RunbookBlock, e: BlockEnv): Promise<BlockRun> {
  const script = substitute(block.code, { env: e.env, ...e.values });
  const cwd = mkdtempSync(join(tmpdir(), 'runbook-'));
  mkdirSync(join(cwd, 'inventory'));
  symlinkSync(resolve(e.inventory), join(cwd, 'inventory', `${e.env}.yaml`));
  return new Promise((done, fail) => {
    const child = spawn('bash', ['-eo', 'pipefail', '-c', `${prelude(e)}\n${script}`], {
      cwd,
      env: { ...process.env, BOOTSTRAP_STATE_DIR: e.stateDir, CI: 'true' },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d: Buffer) => (stdout += d));
    child.stderr.on('data', (d: Buffer) => (stderr += d));
    const timer = setTimeout(() => child.kill('SIGKILL'), e.timeoutMs ?? 900_000);
    child.on('close', (code) => {
      clearTimeout(timer);
      let leaks: string[];
      try {
        leaks = secretLeaks({ stdout, stderr }, e.stateDir, e.inventory, e.env);
      } catch (err) {
        fail(err);
        return;
      }
      if (leaks.length) fail(new Error(`the runbook block (line ${block.line}) leaked secrets:\n${leaks.join('\n')}`));
      else done({ code, stdout, stderr, script });
    });
  });
}
