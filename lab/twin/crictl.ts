// `k3s crictl …`: k3s embeds crictl (k3s-io/k3s cmd/k3s/main.go, pointed at its containerd socket). The twin
// runs no containerd, so it knows one container per node: the Cilium agent's (container cilium-agent of the
// cilium DaemonSet's pod), found through the agent's own status socket (/var/run/cilium/cilium.sock, a hostPath
// on the node), which answers the twin-private GET /twin/v1/container with the container's identity. That keeps
// crictl independent of how the agent runs (inside the k3s twin or as its own process).
//   ps [--name RE] [--state S] [-a] [-q]            kubernetes-sigs/cri-tools cmd/crictl/container.go: -q prints
//                                                   full IDs, one a line; otherwise a table with truncated IDs.
//   exec ID cilium-dbg status [-o json]             cilium/cilium cilium-dbg/cmd/status.go: GET /v1/healthz on
//                                                   the agent's socket, StatusResponse as JSON (-o json).
//   exec ID cilium-health status [--probe] [-o json] cilium/cilium cilium-health/cmd/status.go: GET /v1beta/status
//                                                   (PUT /v1beta/status/probe with --probe) on the health socket
//                                                   /var/run/cilium/health.sock, HealthStatusResponse as JSON.
// Refusals in their words: an unknown container as containerd's CRI Exec says it (containerd/containerd
// internal/cri/server/container_exec.go "failed to find container %q in store: not found", gRPC NotFound),
// wrapped by crictl (cmd/crictl/exec.go "execing command in container %s: %w") and logged by logrus.Fatal.
import http from 'node:http';
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

/** logrus's text formatter without a terminal, as crictl's main logs a fatal error. */
const fatal = (io: CrictlIO, msg: string) =>
  io.err(
    `time="${io
      .now()
      .toISOString()
      .replace(/\.\d{3}Z$/, 'Z')}" level=fatal msg=${JSON.stringify(msg)}\n`,
  );

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
    const at = rest.findIndex((a) => !a.startsWith('-'));
    const id = at >= 0 ? rest[at] : undefined;
    const command = at >= 0 ? rest.slice(at + 1) : [];
    if (!id || !command.length) {
      io.err('NAME:\n   crictl exec - Run a command in a running container\n\nUSAGE:\n   crictl exec [command options] [CONTAINER-ID] COMMAND [ARG...]\n');
      return 1;
    }
    // containerd's store resolves a unique ID prefix (truncindex).
    const found = (await containers(socket)).find((c) => c.id.startsWith(id));
    if (!found) {
      fatal(io, `execing command in container ${id}: rpc error: code = NotFound desc = failed to find container "${id}" in store: not found`);
      return 1;
    }
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
    const r = await socketGet(socket, '/v1/healthz');
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
  io.err(
    `time="${io
      .now()
      .toISOString()
      .replace(/\.\d{3}Z$/, 'Z')}" level=fatal msg="No help topic for '${cmd ?? ''}'"\n`,
  );
  return 3;
}
