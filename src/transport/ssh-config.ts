// A small reader of OpenSSH's client configuration (~/.ssh/config), for the options this tool honours:
// Host blocks (patterns with `*`, `?` and `!`), HostName, User, Port, IdentityFile, ProxyJump,
// UserKnownHostsFile, and Include. Like `ssh`, the first value obtained for an option wins (IdentityFile
// accumulates). `Match` blocks are not evaluated (only `Match all` applies): their options are ignored
// rather than guessed at.
//
// Parsing is pure; loadSshConfig() is the only function that touches the file system, and its path is
// always given by the caller (tests never read the operator's real ~/.ssh/config). It reads through
// readRegularFile: a FIFO or device is SSH_CONFIG_UNREADABLE, never a blocked run.
import { readdirSync } from 'node:fs';
import { homedir } from 'node:os';
import { basename, dirname, isAbsolute, join } from 'node:path';
import { CauseError } from '../errors.ts';
import { NotRegularFile, readProblem, readRegularText } from '../util/regular-file.ts';
import { matchPattern, matchPatternList } from './patterns.ts';

export interface SshConfigBlock {
  /** Host patterns; `['*']` for the options before the first Host line and for `Match all`. */
  patterns: string[];
  /** A `Match` block other than `Match all`: never applies. */
  unsupportedMatch?: boolean;
  /** Options in file order, keywords lower-cased. */
  options: Array<{ key: string; value: string }>;
  file: string;
  line: number;
}

export interface SshConfig {
  blocks: SshConfigBlock[];
  /** The file it was read from (for messages), or undefined when there was none. */
  file?: string;
}

export const EMPTY_SSH_CONFIG: SshConfig = { blocks: [] };

/** Reads an Include target: the text of every file a (possibly wildcarded) path names, in name order. */
export type IncludeReader = (pattern: string) => Array<{ file: string; text: string }>;

/** Split one config line into keyword and arguments (`Key value`, `Key=value`, double quotes). */
export function splitConfigLine(line: string): { key: string; args: string[] } | undefined {
  const trimmed = line.trim();
  if (trimmed === '' || trimmed.startsWith('#')) return undefined;
  const m = /^([A-Za-z][A-Za-z0-9]*)\s*(?:=\s*|\s+|$)(.*)$/.exec(trimmed);
  if (!m) return undefined;
  const args: string[] = [];
  const re = /"([^"]*)"|(\S+)/g;
  let a: RegExpExecArray | null;
  while ((a = re.exec(m[2])) !== null) {
    if (a[2]?.startsWith('#')) break; // a trailing comment
    args.push(a[1] ?? a[2]);
  }
  return { key: m[1].toLowerCase(), args };
}

/** Parse config text into blocks. `readInclude` resolves Include lines (none when omitted). */
export function parseSshConfig(text: string, file: string, readInclude?: IncludeReader, depth = 0): SshConfigBlock[] {
  const blocks: SshConfigBlock[] = [];
  let current: SshConfigBlock = { patterns: ['*'], options: [], file, line: 0 };
  blocks.push(current);
  const lines = text.split(/\r?\n/);
  for (let i = 0; i < lines.length; i++) {
    const parsed = splitConfigLine(lines[i]);
    if (!parsed) continue;
    const { key, args } = parsed;
    if (key === 'host') {
      current = { patterns: args, options: [], file, line: i + 1 };
      blocks.push(current);
    } else if (key === 'match') {
      const all = args.length === 1 && args[0].toLowerCase() === 'all';
      current = { patterns: ['*'], unsupportedMatch: !all, options: [], file, line: i + 1 };
      blocks.push(current);
    } else if (key === 'include') {
      if (!readInclude || depth >= 16) continue;
      // An Include inside a Host block applies only to that block, as in ssh: its options join the
      // current block; its own Host lines start blocks of their own after it.
      for (const arg of args) {
        for (const inc of readInclude(arg)) {
          const [head, ...rest] = parseSshConfig(inc.text, inc.file, readInclude, depth + 1);
          current.options.push(...head.options);
          if (rest.length > 0) {
            blocks.push(...rest);
            current = { ...current, options: [] }; // later lines of the including block still apply to it
            blocks.push(current);
          }
        }
      }
    } else if (args.length > 0) {
      current.options.push({ key, value: args.join(' ') });
    }
  }
  return blocks;
}

/** The options this tool uses, for one host, before token and ~ expansion. */
export interface HostOptions {
  hostName?: string;
  user?: string;
  port?: number;
  identityFiles: string[];
  proxyJump?: string;
  userKnownHostsFile?: string;
}

/**
 * The options that apply to a host. `names` are the names the host goes by (the inventory name, then its
 * address): a block applies when one of them matches its patterns and none is excluded by a `!` pattern.
 */
export function lookupHost(config: SshConfig, names: string[]): HostOptions {
  const out: HostOptions = { identityFiles: [] };
  for (const block of config.blocks) {
    if (block.unsupportedMatch) continue;
    const verdicts = names.map((n) => matchPatternList(n, block.patterns));
    if (verdicts.includes(false) || !verdicts.includes(true)) continue;
    for (const { key, value } of block.options) {
      switch (key) {
        case 'hostname':
          out.hostName ??= value;
          break;
        case 'user':
          out.user ??= value;
          break;
        case 'port': {
          const port = Number(value);
          if (out.port === undefined && Number.isInteger(port) && port > 0 && port < 65536) out.port = port;
          break;
        }
        case 'identityfile':
          if (value.toLowerCase() !== 'none') out.identityFiles.push(value);
          break;
        case 'proxyjump':
          out.proxyJump ??= value;
          break;
        case 'userknownhostsfile':
          out.userKnownHostsFile ??= value.split(/\s+/)[0];
          break;
      }
    }
  }
  return out;
}

/** Expand `~` and the ssh tokens this tool can know (%h %p %r %u %n %d %%) in a path. */
export function expandPath(value: string, t: { home: string; host?: string; port?: number; user?: string; localUser?: string; alias?: string }): string {
  let v = value.replace(/%([%hprund])/g, (_, c: string) => {
    switch (c) {
      case '%':
        return '%';
      case 'h':
        return t.host ?? '';
      case 'p':
        return String(t.port ?? 22);
      case 'r':
        return t.user ?? '';
      case 'u':
        return t.localUser ?? '';
      case 'n':
        return t.alias ?? t.host ?? '';
      default:
        return t.home;
    }
  });
  if (v === '~') v = t.home;
  else if (v.startsWith('~/')) v = join(t.home, v.slice(2));
  return v;
}

/** SSH_CONFIG_UNREADABLE for a config file that cannot be read (or would block the run if it were). */
function unreadable(path: string, err: unknown, includedFrom?: string): CauseError {
  const seen = `${path} ${readProblem(err)}${includedFrom ? ` (named by an Include line of ${includedFrom})` : ''}`;
  return new CauseError('SSH_CONFIG_UNREADABLE', { message: `ssh client configuration: ${seen}`, evidence: { command: `ls -l ${path}`, seen } });
}

/**
 * Read a config file (missing file → empty config), following Include lines relative to ~/.ssh. Throws
 * SSH_CONFIG_UNREADABLE for one that is a FIFO, socket, device or folder (refused before a byte is read) or
 * that cannot be read; an Include naming nothing readable is skipped, as ssh does, but never a FIFO or device.
 */
export function loadSshConfig(path: string, home = homedir()): SshConfig {
  let text: string;
  try {
    text = readRegularText(path);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return { blocks: [], file: path };
    throw unreadable(path, err);
  }
  const sshDir = join(home, '.ssh');
  const readInclude: IncludeReader = (pattern) => {
    let p = expandPath(pattern, { home });
    if (!isAbsolute(p)) p = join(sshDir, p);
    // Wildcards in the last path component only (the common `config.d/*`).
    const dir = dirname(p);
    const base = basename(p);
    let names: string[];
    try {
      names = /[*?]/.test(base)
        ? readdirSync(dir)
            .filter((n) => matchPattern(n, base))
            .sort()
        : [base];
    } catch {
      return [];
    }
    const out: Array<{ file: string; text: string }> = [];
    for (const n of names) {
      try {
        out.push({ file: join(dir, n), text: readRegularText(join(dir, n)) });
      } catch (err) {
        if (err instanceof NotRegularFile && err.kind === 'other') throw unreadable(join(dir, n), err, path);
        // An Include that names nothing readable is skipped, as ssh does.
      }
    }
    return out;
  };
  return { blocks: parseSshConfig(text, path, readInclude), file: path };
}
