// The run log: every remote command with host, exit code, duration and output, one file per run in
// the environment's state folder (0600). Secrets are redacted twice over: commands marked secret have
// their output withheld, and every registered secret value is replaced wherever it appears.
import { appendFileSync, mkdirSync, writeFileSync } from 'node:fs';
import { dirname } from 'node:path';
import type { CommandLog } from '../transport/types.ts';

export class Redactor {
  private readonly secrets = new Set<string>();
  add(secret: string): void {
    if (secret.length >= 4) this.secrets.add(secret);
  }
  apply(text: string): string {
    let out = text;
    for (const s of this.secrets) out = out.split(s).join('[REDACTED]');
    return out;
  }
}

export class RunLog implements CommandLog {
  constructor(readonly file: string, private readonly redactor: Redactor, private readonly now: () => Date = () => new Date()) {
    mkdirSync(dirname(file), { recursive: true, mode: 0o700 });
    writeFileSync(file, '', { mode: 0o600 });
  }

  record(e: { host: string; command: string; code: number | null; durationMs: number; stdout: string; stderr: string; secret?: boolean }): void {
    const r = (s: string) => this.redactor.apply(s);
    const body = e.secret
      ? '  (output withheld: the command carries a secret)\n'
      : indent('stdout', r(e.stdout)) + indent('stderr', r(e.stderr));
    this.write(`${this.now().toISOString()} ${e.host} exit=${e.code ?? 'none'} ${e.durationMs}ms\n  $ ${r(e.command)}\n${body}`);
  }

  note(line: string): void {
    this.write(`${this.now().toISOString()} ${this.redactor.apply(line)}\n`);
  }

  private write(text: string): void {
    appendFileSync(this.file, text);
  }
}

function indent(label: string, text: string): string {
  const t = text.trimEnd();
  if (!t) return '';
  return `  ${label}:\n${t
    .split('\n')
    .map((l) => `    ${l}`)
    .join('\n')}\n`;
}
