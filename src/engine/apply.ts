// Applying a plan: each change goes through here, so what check mode shows is exactly what runs.
import { CauseError } from '../errors.ts';
import { readFile } from 'node:fs/promises';
import type { Remote } from '../transport/types.ts';
import { shq } from '../util/shell.ts';
import type { Change } from './changes.ts';

const DEFAULT_COMMAND_BUDGET_MS = 120_000;

export async function applyChange(remote: Remote, change: Change, signal?: AbortSignal): Promise<void> {
  if (change.kind === 'file' || change.kind === 'upload') {
    const p = shq(change.path);
    const content = change.kind === 'file' ? change.content : await readFile(change.localPath);
    const owner = change.kind === 'file' ? change.owner : undefined;
    const secret = change.kind === 'file' ? change.secret : false;
    const tmp = shq(`${change.path}.bootstrap-tmp`);
    // Write to a temp file and rename: a host never holds a half-written file. umask 077 first so a
    // secret is never readable by others, even for the moment before chmod.
    const script = [
      'umask 077',
      `mkdir -p "$(dirname ${p})"`,
      `cat > ${tmp}`,
      `chmod ${change.mode} ${tmp}`,
      owner ? `chown ${shq(owner)} ${tmp}` : '',
      `mv -f ${tmp} ${p}`,
    ]
      .filter(Boolean)
      .join(' && ');
    const res = await remote.exec(`sh -c ${shq(script)}`, { sudo: true, stdin: content, secret, timeoutMs: DEFAULT_COMMAND_BUDGET_MS, signal });
    if (res.code !== 0) throw applyFailed(remote.host, `write ${change.path}`, res.code, res.stderr);
    return;
  }
  const res = await remote.exec(change.command, {
    sudo: change.sudo,
    stdin: change.stdin,
    secret: change.secret,
    timeoutMs: change.timeoutMs ?? DEFAULT_COMMAND_BUDGET_MS,
    signal,
  });
  if (res.code !== 0) throw applyFailed(remote.host, change.secret ? '(command holding a secret)' : change.command, res.code, res.stderr || res.stdout);
}

function applyFailed(host: string, command: string, code: number | null, output: string): CauseError {
  return new CauseError('APPLY_FAILED', {
    host,
    evidence: { command, exitCode: code, excerpt: tail(output, 20), seen: code === null ? 'the command did not finish within its budget' : `exit ${code}` },
  });
}

export function tail(text: string, lines: number): string {
  return text.trimEnd().split('\n').slice(-lines).join('\n');
}
