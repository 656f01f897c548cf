// A phase's read-only probes on one host run as ONE remote execution: starting a remote process
// costs tens of milliseconds on small machines, and a converged run is almost all probes.
// Each command's stdout and stderr are base64-framed so no output can be mistaken for a frame, and
// stdout is kept exactly (trailing newlines too: file contents are compared byte for byte).
import type { ProbeCommand, ProbeResults } from './phase.ts';

const MARK = '__bootstrap_probe__';

/**
 * The shell script that runs every command and frames its output and exit status. `concurrent`: the commands
 * run at once, each into files of the scratch dir, and are framed in order once all have ended (for reads
 * that each wait on something slow and need nothing from each other).
 */
export function batchScript(commands: Record<string, ProbeCommand>, o: { concurrent?: boolean } = {}): string {
  // stderr goes to a scratch file per command (a private temp dir, removed on exit): capturing two
  // streams separately has no portable in-memory form in sh.
  // A login shell of a non-root user has no sbin in PATH on Debian; read-only tools live there (sysctl, modprobe -n).
  const lines = ['set +e', 'PATH="$PATH:/usr/local/sbin:/usr/sbin:/sbin"; export PATH', 't=$(mktemp -d) || exit 97', 'trap \'rm -rf "$t"\' EXIT'];
  for (const key of Object.keys(commands)) if (!/^[A-Za-z0-9_.:/-]+$/.test(key)) throw new Error(`probe key ${key} has characters the batch cannot frame`);
  if (o.concurrent) {
    const entries = Object.entries(commands);
    entries.forEach(([, cmd], i) => lines.push(`( ( ${cmd.command}\n) >"$t/${i}.out" 2>"$t/${i}.err" </dev/null; echo $? >"$t/${i}.rc" ) &`));
    lines.push('wait');
    // A command whose status was never written (its subshell killed) gets no frame: it did not answer.
    entries.forEach(([key], i) =>
      lines.push(
        `if [ -s "$t/${i}.rc" ]; then printf '${MARK} %s %s %s %s\\n' '${key}' "$(cat "$t/${i}.rc")" "$(base64 -w0 < "$t/${i}.out")" "$(base64 -w0 < "$t/${i}.err")"; fi`,
      ),
    );
    return lines.join('\n') + '\n';
  }
  for (const [key, cmd] of Object.entries(commands)) {
    // A subshell per command: one failing or exiting command cannot end the batch. The trailing "."
    // survives command substitution, which would otherwise strip trailing newlines.
    lines.push(`out=$( ( ${cmd.command}\n) 2>"$t/err" </dev/null; rc=$?; echo .; exit $rc ); rc=$?; out=\${out%.}`);
    lines.push(`printf '${MARK} %s %s %s %s\\n' '${key}' "$rc" "$(printf '%s' "$out" | base64 -w0)" "$(base64 -w0 < "$t/err")"`);
  }
  return lines.join('\n') + '\n';
}

/** The results of `batchScript`'s run, by key. A key with no frame is missing (the batch was cut short). */
export function parseBatch(stdout: string, keys: string[]): ProbeResults {
  const results: ProbeResults = {};
  for (const line of stdout.split('\n')) {
    if (!line.startsWith(MARK + ' ')) continue;
    const [, key, rc, out = '', err = ''] = line.split(' ');
    results[key] = { stdout: decode(out), stderr: decode(err), code: Number(rc) };
  }
  for (const k of keys) if (!results[k]) results[k] = { stdout: '', stderr: '', code: null };
  return results;
}

const decode = (b64: string) => Buffer.from(b64, 'base64').toString('utf8');
