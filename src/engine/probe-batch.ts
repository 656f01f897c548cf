// A phase's read-only probes on one host run as ONE remote execution: starting a remote process
// costs tens of milliseconds on small machines, and a converged run is almost all probes.
// Inside the batch each probe costs one process beyond its own commands (the subshell that keeps an `exit`
// in it from ending the batch; sh execs a lone simple command in it without another fork): the frames are
// shell builtins. Each batch's frames carry a random nonce, so no probe's output can be mistaken for one,
// and stdout comes back byte for byte (trailing newlines too: file contents are compared exactly).
import { randomBytes } from 'node:crypto';
import type { ProbeCommand, ProbeResults } from './phase.ts';

const MARK = '__bootstrap_probe__';

/** The frame marker of one batch: the fixed prefix (never logged, tests look for it) and a nonce. */
export function batchMarker(): string {
  return `${MARK}${randomBytes(8).toString('hex')}`;
}

/**
 * The shell script that runs every command and frames its output and exit status with `marker`:
 *   `<marker> B <key>` NL stdout NL `<marker> E <key> <rc>` NL, then, only when it wrote any,
 *   `<marker> S <key>` NL stderr NL `<marker> s` NL.
 * The newline before each closing frame is the frame's own (the parser takes it off), so output without a
 * trailing newline stays without one. `concurrent`: the commands run at once, each into files of the
 * scratch dir, and are framed in order once all have ended (for reads that each wait on something slow and
 * need nothing from each other).
 */
export function batchScript(commands: Record<string, ProbeCommand>, marker: string, o: { concurrent?: boolean } = {}): string {
  // stderr goes to a scratch file (a private temp dir, removed on exit): capturing two streams separately
  // has no portable in-memory form in sh. It is read back only when not empty (`[ -s ]` is a builtin).
  // A login shell of a non-root user has no sbin in PATH on Debian; read-only tools live there (sysctl, modprobe -n).
  const lines = [
    'set +e',
    'PATH="$PATH:/usr/local/sbin:/usr/sbin:/sbin"; export PATH',
    't=$(mktemp -d) || exit 97',
    'trap \'rm -rf "$t"\' EXIT',
    `m=${marker}`,
  ];
  const entries = Object.entries(commands);
  for (const [key] of entries) if (!/^[A-Za-z0-9_.:/-]+$/.test(key)) throw new Error(`probe key ${key} has characters the batch cannot frame`);
  const stderrFrame = (key: string, file: string) => `[ -s "${file}" ] && { printf '%s S %s\\n' "$m" '${key}'; cat "${file}"; printf '\\n%s s\\n' "$m"; }`;
  if (o.concurrent) {
    // A subshell per command, in the background; its status is written once it has ended.
    entries.forEach(([, cmd], i) => lines.push(`( ( ${cmd.command}\n) >"$t/${i}.out" 2>"$t/${i}.err" </dev/null; echo $? >"$t/${i}.rc" ) &`));
    lines.push('wait');
    // A command whose status was never written (its subshell killed) gets no closing frame: it did not answer.
    entries.forEach(([key], i) => {
      lines.push(`if read rc < "$t/${i}.rc"; then printf '%s B %s\\n' "$m" '${key}'; [ -s "$t/${i}.out" ] && cat "$t/${i}.out"`);
      lines.push(`printf '\\n%s E %s %s\\n' "$m" '${key}' "$rc"; ${stderrFrame(key, `$t/${i}.err`)}; fi`);
    });
  } else {
    for (const [key, cmd] of entries) {
      // A subshell per command: one failing or exiting command cannot end the batch. The newline before `)`
      // ends a trailing comment in the command.
      lines.push(`printf '%s B %s\\n' "$m" '${key}'`);
      lines.push(`( ${cmd.command}\n) 2>"$t/e" </dev/null`);
      lines.push(`printf '\\n%s E %s %s\\n' "$m" '${key}' "$?"`);
      lines.push(stderrFrame(key, '$t/e'));
    }
  }
  // The batch's own status says whether it ran to its end (a probe's status is in its frame).
  lines.push('exit 0');
  return lines.join('\n') + '\n';
}

/**
 * The results of `batchScript(…, marker)`'s run, by key. A key with no closing frame is missing (the batch
 * was cut short).
 */
export function parseBatch(stdout: string, keys: string[], marker: string): ProbeResults {
  const results: ProbeResults = {};
  // Every frame line starts a line; a probe's own output cannot hold the marker (its nonce is this batch's).
  const frames = [...stdout.matchAll(new RegExp(`(?<=^|\\n)${marker} ([BESs])(?: ([^ \\n]+))?(?: (\\d+))?\\n`, 'g'))];
  for (let i = 0; i + 1 < frames.length; i++) {
    const [line, kind, key] = frames[i];
    const next = frames[i + 1];
    // What lies between this frame's line and the next one, less the newline that opens the next.
    const body = stdout.slice(frames[i].index + line.length, next.index - 1);
    if (kind === 'B' && next[1] === 'E' && next[2] === key) results[key] = { stdout: body, stderr: '', code: Number(next[3]) };
    else if (kind === 'S' && next[1] === 's' && results[key]) results[key].stderr = body;
  }
  for (const k of keys) if (!results[k]) results[k] = { stdout: '', stderr: '', code: null };
  return results;
}
