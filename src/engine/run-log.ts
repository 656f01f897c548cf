// The run log: every remote command with host, exit code, duration and output, one file per run in
// the environment's state folder (0600). Secrets are redacted twice over: commands marked secret have
// their output withheld, and every registered secret value is replaced wherever it appears.
import { appendFileSync, mkdirSync, writeFileSync } from 'node:fs';
import { dirname } from 'node:path';
import type { CommandLog, CommandLogEntry } from '../transport/types.ts';
import type { CommandShown } from './events.ts';

export class Redactor {
  private readonly secrets = new Set<string>();
  /**
   * A secret and every form it can take in output: as it is, JSON-escaped (evidence is logged as JSON),
   * base64-encoded at each of the three byte alignments it can have inside a larger encoded text (probe
   * frames, `base64` of a file that holds it), and, for a multi-line secret (a PEM key), each long line.
   */
  add(secret: string): void {
    for (const form of secretForms(secret)) if (form.length >= MIN_SECRET) this.secrets.add(form);
    this.longestFirst = undefined;
  }
  /** The forms, longest first, so a form that contains another is replaced whole; sorted once per change. */
  private longestFirst: string[] | undefined;
  apply(text: string): string {
    let out = text;
    this.longestFirst ??= [...this.secrets].sort((a, b) => b.length - a.length);
    // Every command's output passes here: a form not in it costs a search, not a copy.
    for (const s of this.longestFirst) if (out.includes(s)) out = out.split(s).join('[REDACTED]');
    return out;
  }
}

/** Shorter fragments would redact ordinary words; every real secret here is far longer. */
const MIN_SECRET = 8;

function secretForms(secret: string): string[] {
  const forms = new Set([secret, JSON.stringify(secret).slice(1, -1)]);
  const lines = secret
    .split('\n')
    .map((l) => l.trim())
    .filter((l) => l.length >= 16);
  if (lines.length > 1) for (const l of lines) forms.add(l);
  for (const text of [...forms]) for (const b of base64Forms(Buffer.from(text))) forms.add(b);
  return [...forms];
}

/**
 * The base64 characters that depend on `bytes` alone, for each offset (mod 3) at which they can start
 * inside an encoded text: whatever surrounds them, an encoding of text holding `bytes` contains one of these.
 */
function base64Forms(bytes: Buffer): string[] {
  const forms: string[] = [];
  for (let a = 0; a < 3; a++) {
    const padded = Buffer.concat([Buffer.alloc(a), bytes, Buffer.alloc(3)]);
    const enc = padded.toString('base64');
    // Character i covers bits [6i, 6i+6) of the padded bytes: keep those whose bits are all in `bytes`.
    const first = Math.ceil((a * 8) / 6);
    const last = Math.floor(((a + bytes.length) * 8) / 6) - 1;
    if (last - first + 1 >= MIN_SECRET) forms.push(enc.slice(first, last + 1));
  }
  return forms;
}

export class RunLog implements CommandLog {
  constructor(
    readonly file: string,
    private readonly redactor: Redactor,
    private readonly now: () => Date = () => new Date(),
  ) {
    mkdirSync(dirname(file), { recursive: true, mode: 0o700 });
    writeFileSync(file, '', { mode: 0o600 });
  }

  /** Writes the command and returns it as written (the session emits it as a `command` event for --json). */
  record(e: CommandLogEntry): CommandShown {
    const r = (s: string) => this.redactor.apply(s);
    const shown: CommandShown = {
      host: e.host,
      command: r(e.command),
      exitCode: e.code,
      durationMs: e.durationMs,
      stdout: e.secret ? '' : r(e.stdout),
      stderr: e.secret ? '' : r(e.stderr),
      ...(e.lost && { ended: 'connection lost' as const }),
      ...(e.notStarted && { ended: 'not started: the connection closed before it' as const }),
      ...(e.secret && { withheld: true as const }),
    };
    const body = shown.withheld ? '  (output withheld: the command carries a secret)\n' : indent('stdout', shown.stdout) + indent('stderr', shown.stderr);
    const exit = `exit=${shown.exitCode ?? 'none'}${shown.ended ? ` (${shown.ended})` : ''}`;
    // A multi-line command (a script) keeps its lines indented: every entry is its header line and indented text.
    const command = shown.command.split('\n').join('\n    ');
    this.write(`${this.now().toISOString()} ${e.host} ${exit} ${e.durationMs}ms\n  $ ${command}\n${body}`);
    return shown;
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
