// Root on the hosts goes through `sudo -n` (never a password prompt: a prompt would hang the run).
// A command is wrapped whole in `sh -c`, so pipes, `&&` and redirections run as root too.
import { CauseError } from '../errors.ts';
import { shq } from '../util/shell.ts';
import { connectionLost } from './lost.ts';
import type { Remote } from './types.ts';
import type { UpstreamPatterns } from '../causes/upstream-patterns.ts';

/**
 * The command line that runs `command` as root without a password prompt. `tag` becomes the shell's $0:
 * it names the command in `ps` on the host and lets sudoStopCommand find it.
 */
export function sudoCommand(command: string, tag?: string): string {
  return `sudo -n sh -c ${shq(command)}${tag ? ` ${tag}` : ''}`;
}

/**
 * Stop a tagged sudo command that overran its budget or was aborted. sshd's "signal" request cannot do it:
 * sshd signals as the SSH user, and the processes under sudo belong to root. So, as root: every process
 * in the session of the processes carrying the tag gets TERM. (`[x]` in the pattern keeps it from
 * matching this command's own line.)
 */
export function sudoStopCommand(tag: string): string {
  const pattern = `${tag.slice(0, -1)}[${tag.slice(-1)}]$`;
  return `sudo -n sh -c ${shq(`for p in $(pgrep -f -- '${pattern}'); do s=$(ps -o sid= -p "$p") && pkill -TERM -s $s; done; true`)}`;
}

/** The sudo probe's budget, once per connection. */
const SUDO_PROBE_BUDGET_MS = 15_000;

/** The probe: exits 0 when the user may run anything as root without a password. */
const SUDO_PROBE = 'sudo -n true';

/** sudo's words when it would have to ask (the password, or a terminal to ask on). */
const NEEDS_PASSWORD = /a password is required|a terminal is required|must have a tty|no askpass program/i;

/** @public gathered by test/unit/cause-matchers-exercised.test.ts (src/causes/upstream-patterns.ts) */
export const UPSTREAM_PATTERNS: UpstreamPatterns = { NEEDS_PASSWORD };

type SudoResult = { code: number | null; stdout: string; stderr: string };

/** The first lines of what a refused command said: sudo's words, or the shell's. */
const excerptOf = (r: SudoResult) => (r.stderr || r.stdout).trim().split('\n').slice(0, 5).join('\n');

/**
 * The cause when a `sudo -n` command's result says sudo itself refused (it would ask for a password) or is
 * not installed (the user's shell could not find it: status 127); undefined for any other result, the
 * command's own. Only for a command that never ends with 127 itself (`sudo -n true`, the lock's script, a probe
 * batch: each ends with a status of its own).
 */
export function sudoRefusal(host: string, command: string, r: SudoResult): CauseError | undefined {
  if (r.code === 0 || r.code === null) return undefined;
  const evidence = { command, exitCode: r.code, excerpt: excerptOf(r) };
  if (NEEDS_PASSWORD.test(r.stderr)) {
    return new CauseError('SUDO_NEEDS_PASSWORD', {
      host,
      message: `sudo on ${host} asks for a password`,
      evidence: { ...evidence, seen: `\`${command}\` exited ${r.code}: sudo wants a password` },
    });
  }
  // The shell's "command not found": the host lacks the sudo package, as node-baseline's TOOL_MISSING names
  // any other program.
  if (r.code === 127) {
    return new CauseError('TOOL_MISSING', {
      host,
      message: `sudo is not installed on ${host} (Debian package sudo)`,
      evidence: { ...evidence, seen: 'sudo: command not found (Debian package sudo)' },
    });
  }
  return undefined;
}

/**
 * Check, once per connection, that sudo works without a password. Throws SUDO_NEEDS_PASSWORD when sudo
 * would ask; TOOL_MISSING when sudo is not installed;
 * GATE_FAILED when sudo fails for another reason (the user not allowed at all). A --check and a run with a
 * precheck send it (src/engine/session.ts); a run that takes the host locks needs none of its own: the lock is
 * its first command through sudo and names the same causes, one round trip less per host.
 */
export async function checkSudo(remote: Remote, opts: { signal?: AbortSignal; timeoutMs?: number } = {}): Promise<void> {
  const r = await remote.exec(SUDO_PROBE, { timeoutMs: opts.timeoutMs ?? SUDO_PROBE_BUDGET_MS, signal: opts.signal });
  if (r.code === 0) return;
  if (r.lost) throw connectionLost(remote.host, SUDO_PROBE);
  const refused = sudoRefusal(remote.host, SUDO_PROBE, r);
  if (refused) throw refused;
  throw new CauseError('GATE_FAILED', {
    host: remote.host,
    message: `sudo does not work on ${remote.host}`,
    evidence: {
      command: SUDO_PROBE,
      exitCode: r.code,
      excerpt: excerptOf(r),
      seen: r.code === null ? `\`${SUDO_PROBE}\` did not finish` : `\`${SUDO_PROBE}\` exited ${r.code}`,
    },
  });
}
