// The changes a plan can contain: everything a run does, as data. Check mode prints them (describeChange),
// the engine performs them (apply.ts) and nothing else: no step applies its own plan. A change says where
// it runs (`on`), how its failure is named (`failsAs`), and an effect that is not one command (an `action`)
// lists every command it runs, so check mode shows all of it. Check mode never performs any kind.
import { createHash } from 'node:crypto';
import { createTwoFilesPatch } from 'diff';
import type { CauseId } from '../causes/catalogue.ts';
import type { CauseError } from '../errors.ts';
import type { ExecResult } from '../transport/types.ts';
import { UPLOAD_BYTES_PER_SECOND, UPLOAD_FLOOR_MS, uploadBudgetMs } from './upload-budget.ts';
import type { RunContext } from './context.ts';
import type { HostRef } from './host-ref.ts';

export interface FileChange {
  kind: 'file';
  path: string;
  /** The whole new content. Never printed when `secret`. */
  content: string;
  /** The content now on the host, or null when the file does not exist. */
  current: string | null;
  mode: string;
  owner?: string;
  /** The content is a secret (token, key, kubeconfig): diffs show that it changes, never what. */
  secret?: boolean;
}

/**
 * How a failed command is named: a cause id (its evidence the command, exit code and output's tail), or a
 * pure function of the command's result (and the host it ran on) returning the cause (undefined: APPLY_FAILED, as without failsAs).
 * A lost connection is SSH_UNREACHABLE whatever failsAs says: nobody knows how far the command got.
 */
export type FailsAs = CauseId | ((res: ExecResult, host: string) => CauseError | undefined);

export interface CommandChange {
  kind: 'command';
  /** Why, in words: shown in check mode beside the command. */
  description: string;
  command: string;
  /** The host it runs on, by its inventory name: the step's host when absent. */
  on?: string;
  /** How its failure is named (APPLY_FAILED when absent or when it returns undefined). */
  failsAs?: FailsAs;
  sudo?: boolean;
  /** Bytes sent on stdin (secrets travel here, never on the command line). */
  stdin?: string;
  secret?: boolean;
  /** Upper bound for this command; the default is in apply.ts. */
  timeoutMs?: number;
}

/** A local file (a binary, an images tarball) copied to the host as it is. */
export interface UploadChange {
  kind: 'upload';
  localPath: string;
  path: string;
  mode: string;
  sha256: string;
  /** What the host has now (its sha256), or null when absent. */
  currentSha256: string | null;
  /** The file's size, when the planner knows it: the plan then shows the upload's budget (upload-budget.ts uploadBudgetMs). */
  bytes?: number;
}

/**
 * A file on the operator's machine, under the environment's state folder (the cluster token, the admin
 * kubeconfig): written whole or not at all (src/util/atomic-file.ts), 0600 when secret.
 */
export interface LocalChange {
  kind: 'local';
  /** An absolute path inside the run's state folder (the engine refuses any other). */
  path: string;
  content: string;
  /** The file's content now, or null when it does not exist (for a secret: never shown). */
  current: string | null;
  mode: string;
  secret?: boolean;
}

/** What an action's run is given: the run's context, the step's host, and a signal that fires at its budget. */
export interface ActionContext extends RunContext {
  host: HostRef;
}

/**
 * The escape hatch for an effect that is not one command (take a backup; delete a Node and wait until its
 * etcd member is gone; the failover drill): `runs` lists EVERY command it may run, on which host, in order,
 * and `writes` every file it writes on the operator's machine; check mode shows both and never calls `run`.
 * It names its own causes; a budget, when given, is its whole duration (the engine stops it there).
 */
export interface ActionChange {
  kind: 'action';
  description: string;
  /** The host it acts through, by its inventory name (its context's `host`): the step's host when absent. */
  on?: string;
  runs: string[];
  writes?: string[];
  budgetMs?: number;
  run: (ctx: ActionContext) => Promise<void>;
}

export type Change = FileChange | CommandChange | UploadChange | LocalChange | ActionChange;

/** The changes made on a host over its connection (the others run on the operator's machine). */
export type RemoteChange = FileChange | CommandChange | UploadChange;

/** The file change needed to make `path` hold `content` with `mode`, or none when it already does. */
export function fileChange(
  path: string,
  content: string,
  current: { content: string | null; mode?: string | null; sha256?: string | null },
  opts: { mode: string; owner?: string; secret?: boolean },
): FileChange[] {
  // A secret file is probed by its sha256, never read back: its content would reach the run log.
  const sameContent = current.sha256 != null ? current.sha256 === sha256(content) : current.content === content;
  const sameMode = current.mode == null || normaliseMode(current.mode) === normaliseMode(opts.mode);
  if (sameContent && sameMode) return [];
  const now = current.sha256 != null ? (sameContent ? content : SECRET_ON_HOST) : current.content;
  return [{ kind: 'file', path, content, current: now, mode: opts.mode, owner: opts.owner, secret: opts.secret }];
}

/** What a plan holds as the "current content" of a secret file that differs: it was never read. */
const SECRET_ON_HOST = '(secret content on the host, compared by sha256)';

const sha256 = (text: string) => createHash('sha256').update(text).digest('hex');

function normaliseMode(mode: string): string {
  return mode.replace(/^0+/, '').padStart(3, '0');
}

const MAX_DIFF_BYTES = 256 * 1024;

/** What check mode shows for a change: a unified diff for files, the command for commands, every command of an action. */
export function describeChange(change: Change): { summary: string; detail: string } {
  if (change.kind === 'command') {
    const on = change.on ? `on ${change.on}: ` : '';
    return {
      summary: change.description,
      detail: change.secret ? '(command carries a secret: not shown)' : `${on}$ ${change.sudo ? 'sudo ' : ''}${change.command}`,
    };
  }
  if (change.kind === 'action') {
    const budget = change.budgetMs === undefined ? [] : [`(budget ${budgetSeconds(change.budgetMs)})`];
    const on = change.on ? `on ${change.on}: ` : '';
    return {
      summary: change.description,
      detail: [...change.runs.map((c) => `${on}$ ${c}`), ...(change.writes ?? []).map((w) => `writes ${w}`), ...budget].join('\n'),
    };
  }
  if (change.kind === 'local') {
    const verb = change.current === null ? 'create' : change.current === change.content ? 'chmod' : 'update';
    const summary = `${verb} ${change.path} on the operator's machine (mode ${change.mode})`;
    if (change.secret) return { summary, detail: '(secret content: diff not shown)' };
    if (verb === 'chmod') return { summary, detail: '' };
    return { summary, detail: diffOf(change.path, change.current, change.content) };
  }
  if (change.kind === 'upload') {
    const now = change.currentSha256 ? `replacing sha256 ${change.currentSha256.slice(0, 12)}…` : 'absent on the host';
    const size = change.bytes === undefined ? '' : `; ${mib(change.bytes)} MiB, budget ${budgetText(uploadBudgetMs(change.bytes))}`;
    return { summary: `upload ${change.localPath} → ${change.path} (mode ${change.mode})`, detail: `sha256 ${change.sha256.slice(0, 12)}…, ${now}${size}` };
  }
  const verb = change.current === null ? 'create' : change.current === change.content ? 'chmod' : 'update';
  const summary = `${verb} ${change.path} (mode ${change.mode})`;
  if (change.secret) return { summary, detail: '(secret content: diff not shown)' };
  if (verb === 'chmod') return { summary, detail: '' };
  // A chart embedded in a manifest is megabytes of base64: say how much changes instead of printing it.
  if (change.content.length + (change.current?.length ?? 0) > MAX_DIFF_BYTES) {
    return { summary, detail: `(${change.content.length} bytes planned, ${change.current?.length ?? 0} on the host: too large to show as a diff)` };
  }
  return { summary, detail: diffOf(change.path, change.current, change.content, 'on host') };
}

function diffOf(path: string, current: string | null, content: string, where = 'now'): string {
  const detail = createTwoFilesPatch(path, path, current ?? '', content, where, 'planned', { context: 3 });
  return detail.split('\n').slice(2).join('\n').trimEnd();
}

function budgetSeconds(ms: number): string {
  const s = Math.round(ms / 1000);
  return s < 120 ? `${s} s` : `${Math.floor(s / 60)} min ${s % 60} s`;
}

function mib(bytes: number): string {
  return (bytes / 1024 / 1024).toFixed(1);
}

/** "3 min 10 s (1 MiB/s plus 120 s)": how long an upload may take, and why. */
function budgetText(ms: number): string {
  const s = Math.round(ms / 1000);
  const text = s < 120 ? `${s} s` : `${Math.floor(s / 60)} min ${s % 60} s`;
  return `${text} (${UPLOAD_BYTES_PER_SECOND / 1024 / 1024} MiB/s plus ${UPLOAD_FLOOR_MS / 1000} s)`;
}
