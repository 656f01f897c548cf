// `k3s crictl …`: k3s embeds crictl (k3s-io/k3s cmd/k3s/main.go, pointed at its containerd socket). The twin
// runs no containerd, so it knows one container per node: the Cilium agent's (container cilium-agent of the
// cilium DaemonSet's pod), found through the agent's own status socket (/var/run/cilium/cilium.sock, a hostPath
// on the node), which answers the twin-private GET /twin/v1/container with the container's identity. That keeps
// crictl independent of how the agent runs (inside the k3s twin or as its own process).
//   ps [--name RE] [--state S] [-a] [-q]            kubernetes-sigs/cri-tools cmd/crictl/container.go: -q prints
//                                                   full IDs, one a line; otherwise a table with truncated IDs.
//   exec [--name RE] [--state S] [-q] …             kubernetes-sigs/cri-tools v1.33.0 cmd/crictl/exec.go: with a
//                                                   filter flag no ID is taken, the command runs in each listed
//                                                   container ("<id>:" before its output unless -q); none listed:
//                                                   logrus error "No containers found per filter flags", exec's help
//                                                   on stdout, exit 0 (cli.ShowSubcommandHelp returns nil). The
//                                                   help is its NAME, USAGE and DESCRIPTION, not its OPTIONS.
//   exec ID cilium-dbg status [-o json]             cilium/cilium cilium-dbg/cmd/status.go: GET /v1/healthz on
//                                                   the agent's socket, StatusResponse as JSON (-o json).
//   exec ID cilium-health status [--probe] [-o json] cilium/cilium cilium-health/cmd/status.go: GET /v1beta/status
//                                                   (PUT /v1beta/status/probe with --probe) on the health socket
//                                                   /var/run/cilium/health.sock, HealthStatusResponse as JSON.
//   exec ID sh -c SCRIPT [NAME ARG…]                the agent image's shell (an Ubuntu root filesystem: cilium/cilium
//                                                   images/runtime/Dockerfile; the chart runs bash in that image):
//                                                   the script's output and status are the exec's (crictl exec without
//                                                   -t keeps stdout and stderr apart, cri-tools cmd/crictl/exec.go).
// What `sh -c` does not imitate: the twin's container has no root filesystem, so the HOST's /bin/sh runs the
// script, with the host's tools (echo, printf, anything else on the host's PATH, which the image may lack or have
// in another version) and the host's files; only `cilium-dbg` and `cilium-health` are the container's, small
// wrappers first on the script's PATH that hand their arguments (one a line: none may hold a newline) back to
// this crictl process, which answers them as `exec ID cilium-dbg …` does; their output reaches the script
// whole once they ended (not streamed), and start up to 10 ms later than in a real container (this process looks
// for their calls every 10 ms). No namespaces, no user of the container.
// Refusals in their words: an unknown container as containerd's CRI Exec says it (containerd/containerd
// internal/cri/server/container_exec.go "failed to find container %q in store: not found", gRPC NotFound),
// wrapped by crictl (cmd/crictl/exec.go "execing command in container %s: %w") and logged by logrus.Fatal.
import { spawn } from 'node:child_process';
import { closeSync, constants, existsSync, mkdirSync, mkdtempSync, openSync, readFileSync, readdirSync, rmSync, writeFileSync, writeSync } from 'node:fs';
import http from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { AgentContainer } from './addons/cilium/status-api.ts';

export const CILIUM_SOCKET = '/var/run/cilium/cilium.sock';
export const HEALTH_SOCKET = '/var/run/cilium/health.sock';

/** The container behind the agent's status socket (one shape, defined where the socket serves it). */
type TwinContainer = AgentContainer;

export interface CrictlIO {
  out(s: string): void;
  err(s: string): void;
  now(): Date;
}

/** GET on the agent's unix socket; undefined when nothing answers there. */
function socketGet(socketPath: string, path: string, timeoutMs = 5_000, method = 'GET'): Promise<{ status: number; body: string } | { error: string }> {
  return new Promise((resolve) => {
    const req = http.request({ socketPath, path, method, headers: { host: 'localhost' } }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c) => chunks.push(c));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body: Buffer.concat(chunks).toString('utf8') }));
    });
    req.setTimeout(timeoutMs, () => req.destroy(new Error('context deadline exceeded')));
    const verb = method[0] + method.slice(1).toLowerCase();
    req.on('error', (e) =>
      resolve({
        error: `${verb} "http://localhost${path}": dial unix ${socketPath}: ${(e as NodeJS.ErrnoException).code === 'ENOENT' ? 'connect: no such file or directory' : (e as NodeJS.ErrnoException).code === 'ECONNREFUSED' ? 'connect: connection refused' : e.message}`,
      }),
    );
    req.end();
  });
}

async function containers(socketPath: string): Promise<TwinContainer[]> {
  const r = await socketGet(socketPath, '/twin/v1/container', 3_000);
  if ('error' in r || r.status !== 200) return [];
  try {
    return [JSON.parse(r.body) as TwinContainer];
  } catch {
    return [];
  }
}

/** A line of logrus's text formatter without a terminal (crictl logs its errors so). */
const logrus = (io: CrictlIO, level: 'error' | 'fatal', msg: string) =>
  io.err(
    `time="${io
      .now()
      .toISOString()
      .replace(/\.\d{3}Z$/, 'Z')}" level=${level} msg=${JSON.stringify(msg)}\n`,
  );

/** As crictl's main logs the error its command returned (logrus.Fatal). */
const fatal = (io: CrictlIO, msg: string) => logrus(io, 'fatal', msg);

/** `crictl exec`'s flags (cri-tools v1.33.0 cmd/crictl/exec.go): those taking a value, by every name. */
const EXEC_VALUE_FLAGS: Record<string, string> = {
  '--timeout': 'timeout',
  '--transport': 'transport',
  '-r': 'transport',
  '--name': 'name',
  '--pod': 'pod',
  '-p': 'pod',
  '--image': 'image',
  '--state': 'state',
  '--label': 'label',
  '--last': 'last',
  '-n': 'last',
  '--tls-sni': 'tls-sni',
  '--tls-server-name': 'tls-sni',
  '--tls-ca': 'tls-ca',
  '--tls-cert': 'tls-cert',
  '--tls-key': 'tls-key',
};
const EXEC_BOOL_FLAGS: Record<string, string> = {
  '--sync': 'sync',
  '-s': 'sync',
  '--tty': 'tty',
  '-t': 'tty',
  '--interactive': 'interactive',
  '-i': 'interactive',
  '--latest': 'latest',
  '-l': 'latest',
  '--quiet': 'quiet',
  '-q': 'quiet',
  '--ignore-errors': 'ignore-errors',
  '-e': 'ignore-errors',
  '--parallel': 'parallel',
  '-x': 'parallel',
};
/** The flags that make exec list containers instead of taking a CONTAINER-ID. */
const EXEC_FILTERS = ['name', 'pod', 'image', 'state', 'label', 'latest', 'last'];

/**
 * exec's flags up to its first argument (urfave/cli v2 stops there: what follows is the command's), as
 * name → value ('' for a boolean). Combined short booleans (`-qx`) are not imitated.
 */
function execArgs(rest: string[]): { flags: Map<string, string>; args: string[] } {
  const flags = new Map<string, string>();
  let i = 0;
  for (; i < rest.length && rest[i].startsWith('-'); i++) {
    const [flag, inline] = rest[i].split(/=(.*)/s, 2);
    if (EXEC_VALUE_FLAGS[flag]) flags.set(EXEC_VALUE_FLAGS[flag], inline ?? rest[++i] ?? '');
    else if (EXEC_BOOL_FLAGS[flag]) flags.set(EXEC_BOOL_FLAGS[flag], '');
  }
  return { flags, args: rest.slice(i) };
}

/** The head of exec's help (urfave/cli v2's subcommand template with the command's usage lines). */
const EXEC_HELP =
  'NAME:\n   crictl exec - Run a command in a running container\n\nUSAGE:\n   crictl exec [command options] [CONTAINER-ID] COMMAND [ARG...]\n\n' +
  'DESCRIPTION:\n   The CONTAINER-ID is only required if none of the following filter flags are set:\n   --image, --label, --last, --latest, --name, --pod, --state\n';

function flagValue(args: string[], name: string): string | undefined {
  for (let i = 0; i < args.length; i++) {
    if (args[i] === name) return args[i + 1];
    if (args[i].startsWith(`${name}=`)) return args[i].slice(name.length + 1);
  }
  return undefined;
}

const ago = (from: string, now: Date) => {
  const s = Math.max(0, Math.round((now.getTime() - Date.parse(from)) / 1000));
  return s < 60 ? `${s} seconds ago` : s < 3600 ? `${Math.round(s / 60)} minutes ago` : `${Math.round(s / 3600)} hours ago`;
};

export async function runCrictl(args: string[], io: CrictlIO, root = '/'): Promise<number> {
  const socket = join(root, CILIUM_SOCKET);
  const [cmd, ...rest] = args;
  if (cmd === 'ps') {
    const name = flagValue(rest, '--name');
    const state = (flagValue(rest, '--state') ?? flagValue(rest, '-s'))?.toLowerCase();
    const quiet = rest.includes('-q') || rest.includes('--quiet');
    // A running agent is the only container the twin has; a state filter other than running matches none.
    let list = await containers(socket);
    if (name !== undefined) list = list.filter((c) => new RegExp(name).test(c.name));
    if (state !== undefined && state !== 'running' && state !== 'container_running') list = [];
    if (quiet) {
      for (const c of list) io.out(`${c.id}\n`);
      return 0;
    }
    const rows = [
      ['CONTAINER', 'IMAGE', 'CREATED', 'STATE', 'NAME', 'ATTEMPT', 'POD ID', 'POD'],
      ...list.map((c) => [c.id.slice(0, 13), c.image, ago(c.createdAt, io.now()), 'Running', c.name, '0', c.podUid.replace(/-/g, '').slice(0, 13), c.podName]),
    ];
    const widths = rows[0].map((_, i) => Math.max(...rows.map((r) => r[i].length)));
    for (const r of rows) io.out(`${r.map((v, i) => (i === r.length - 1 ? v : v.padEnd(widths[i] + 3))).join('')}\n`);
    return 0;
  }
  if (cmd === 'exec') {
    const o = execArgs(rest);
    const filtered = EXEC_FILTERS.some((f) => o.flags.has(f));
    // With a filter flag every argument is the command, run in each container the filter lists
    // (cri-tools v1.33.0 cmd/crictl/exec.go; k3s v1.33 builds that release: its go.mod replace line).
    const id = filtered ? undefined : o.args[0];
    const command = filtered ? o.args : o.args.slice(1);
    if (!command.length || (!filtered && !id)) {
      // cli.ShowSubcommandHelp writes to the app's Writer (stdout) and returns nil: crictl exits 0.
      io.out(EXEC_HELP);
      return 0;
    }
    let found: TwinContainer | undefined;
    if (filtered) {
      // ListContainers (cmd/crictl/container.go): running containers unless --state says otherwise (and no
      // state at all with --latest or --last), then the name regexp. The twin's one container runs.
      const state = o.flags.get('state')?.toLowerCase();
      const anyState = o.flags.has('latest') || o.flags.has('last');
      const name = o.flags.get('name');
      found = (await containers(socket)).find(
        (c) => (anyState || state === undefined || state === 'running') && (name === undefined || new RegExp(name).test(c.name)),
      );
      if (!found) {
        logrus(io, 'error', 'No containers found per filter flags');
        io.out(EXEC_HELP);
        return 0;
      }
      // Not quiet and not --parallel: each container's ID and a colon before its output.
      if (!o.flags.has('quiet') && !o.flags.has('parallel')) io.out(`${found.id}:\n`);
    } else {
      // containerd's store resolves a unique ID prefix (truncindex).
      found = (await containers(socket)).find((c) => c.id.startsWith(id!));
      if (!found) {
        fatal(io, `execing command in container ${id}: rpc error: code = NotFound desc = failed to find container "${id}" in store: not found`);
        return 1;
      }
    }
    if (command[0] === 'sh' && command[1] === '-c' && command.length >= 3) return inContainerShell(command.slice(2), io, root);
    return execIn(command, io, root);
  }
  io.err(
    `time="${io
      .now()
      .toISOString()
      .replace(/\.\d{3}Z$/, 'Z')}" level=fatal msg="No help topic for '${cmd ?? ''}'"\n`,
  );
  return 3;
}

/** One command of the agent's container, as `crictl exec ID COMMAND…` runs it (the container found). */
async function execIn(command: string[], io: CrictlIO, root: string): Promise<number> {
  if (command[0] === 'cilium-health' && command[1] === 'status') {
    const probe = command.includes('--probe');
    const r = await socketGet(join(root, HEALTH_SOCKET), probe ? '/v1beta/status/probe' : '/v1beta/status', 30_000, probe ? 'PUT' : 'GET');
    if ('error' in r) {
      io.err(`${probe ? 'Cannot get status/probe' : 'Cannot get status'}: ${r.error}\n`);
      return 1;
    }
    const hr = JSON.parse(r.body);
    if (flagValue(command, '-o') === 'json' || flagValue(command, '--output') === 'json') io.out(`${JSON.stringify(hr, null, 2)}\n`);
    else
      io.out(
        `Probe time:   ${hr.timestamp ?? ''}\nNodes:\n${(hr.nodes ?? []).map((n: any) => `  ${n.name}${n.name === hr.local?.name ? ' (localhost)' : ''}:\n    Host connectivity to ${n.host?.['primary-address']?.ip ?? ''}:\n      HTTP to agent:   ${n.host?.['primary-address']?.http?.status || 'OK'}\n`).join('')}`,
      );
    return 0;
  }
  if (command[0] !== 'cilium-dbg' || command[1] !== 'status') {
    io.err(`OCI runtime exec failed: exec failed: unable to start container process: exec: "${command[0]}": executable file not found in $PATH: unknown\n`);
    return 126;
  }
  const json = flagValue(command, '-o') === 'json' || flagValue(command, '--output') === 'json';
  const r = await socketGet(join(root, CILIUM_SOCKET), '/v1/healthz');
  if ('error' in r) {
    // cilium-dbg prints its client's hint (pkg/client Hint) and exits 1.
    io.err(`${r.error}\nIs the agent running?\n`);
    return 1;
  }
  const sr = JSON.parse(r.body);
  if (json) io.out(`${JSON.stringify(sr, null, 2)}\n`);
  else io.out(`KubeProxyReplacement:    ${sr['kube-proxy-replacement']?.mode ?? ''}\nCilium:                  ${sr.cilium?.state ?? ''}\n`);
  return 0;
}

/** The commands of the agent's container the twin has (every other command of a script is the host's). */
const IN_CONTAINER = ['cilium-dbg', 'cilium-health'];

/**
 * A command of the container inside `sh -c`: it hands its name and arguments (one a line) to the crictl process
 * through a call folder, then blocks reading the folder's FIFO `rc` until that process has answered (stdout
 * and stderr in files, then the status through the FIFO) and passes the answer on as its own. Blocking on the
 * FIFO costs no process while it waits (polling with `sleep` cost a process every 10 ms).
 */
const WRAPPER = `#!/bin/sh
c=$(mktemp -d "$CRICTL_TWIN_CALLS/call.XXXXXX") || exit 126
{ printf '%s\\n' "\${0##*/}"; for a in "$@"; do printf '%s\\n' "$a"; done; } >"$c/args"
mkfifo "$c/rc" || exit 126
: >"$c/asked"
read rc <"$c/rc" || rc=126
cat "$c/out"; cat "$c/err" >&2
exit "$rc"
`;

/** How long an answer waits for its wrapper to open the FIFO (it does at once; one that died never will). */
const ANSWER_OPEN_MS = 10_000;

/** Writes `text` into the FIFO once its reader has opened it (O_NONBLOCK: no reader yet is ENXIO, tried again). */
async function intoFifo(path: string, text: string, gone: () => boolean): Promise<void> {
  const until = Date.now() + ANSWER_OPEN_MS;
  for (;;) {
    try {
      const fd = openSync(path, constants.O_WRONLY | constants.O_NONBLOCK);
      try {
        writeSync(fd, text);
      } finally {
        closeSync(fd);
      }
      return;
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code !== 'ENXIO' || gone() || Date.now() > until) return;
      await new Promise((r) => setTimeout(r, 5));
    }
  }
}

/**
 * `sh -c SCRIPT [NAME ARG…]` in the agent's container: the script's status is the exec's. The twin's
 * container has no root filesystem, so the host's /bin/sh runs the script, a private folder first on its PATH
 * holding `cilium-dbg` and `cilium-health` (WRAPPER), which this process answers as `exec ID cilium-dbg …`
 * does; every other command the script runs (echo, printf) is the host's, as the image's would be.
 */
async function inContainerShell(args: string[], io: CrictlIO, root: string): Promise<number> {
  const dir = mkdtempSync(join(tmpdir(), 'crictl-sh-'));
  const bin = join(dir, 'bin');
  mkdirSync(bin);
  for (const name of IN_CONTAINER) writeFileSync(join(bin, name), WRAPPER, { mode: 0o755 });
  const answering: Promise<void>[] = [];
  const taken = new Set<string>();
  // Set once the script ended: an answer whose wrapper never opened its FIFO stops trying then.
  let ended = false;
  const answer = async (call: string) => {
    const [name, ...rest] = readFileSync(join(call, 'args'), 'utf8').split('\n').slice(0, -1);
    let out = '';
    let err = '';
    const code = await execIn([name, ...rest], { out: (t) => (out += t), err: (t) => (err += t), now: io.now }, root);
    writeFileSync(join(call, 'out'), out);
    writeFileSync(join(call, 'err'), err);
    await intoFifo(join(call, 'rc'), `${code}\n`, () => ended);
  };
  const look = setInterval(() => {
    for (const f of readdirSync(dir))
      if (f.startsWith('call.') && !taken.has(f) && existsSync(join(dir, f, 'asked'))) {
        taken.add(f);
        answering.push(answer(join(dir, f)));
      }
  }, 10);
  try {
    const child = spawn('/bin/sh', ['-c', ...args], {
      env: { ...process.env, PATH: `${bin}:${process.env.PATH ?? '/usr/bin:/bin'}`, CRICTL_TWIN_CALLS: dir },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    child.stdout.setEncoding('utf8').on('data', (t: string) => io.out(t));
    child.stderr.setEncoding('utf8').on('data', (t: string) => io.err(t));
    return await new Promise<number>((resolve) => {
      child.on('error', (e) => {
        io.err(`OCI runtime exec failed: exec failed: unable to start container process: ${e.message}: unknown\n`);
        resolve(126);
      });
      child.on('close', (code, signal) => resolve(code ?? (signal === 'SIGKILL' ? 137 : 143)));
    });
  } finally {
    ended = true;
    clearInterval(look);
    await Promise.all(answering);
    rmSync(dir, { recursive: true, force: true });
  }
}
