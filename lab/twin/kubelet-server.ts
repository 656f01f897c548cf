// The kubelet's HTTPS port of an agent (:10250; k3s runs the kubelet inside `k3s agent`, so the listener
// belongs to k3s-agent.service). It serves with the node's serving certificate and authenticates clients
// by a certificate of the cluster's client CA; k3s runs the kubelet with --anonymous-auth=false, so any
// other request gets 401 "Unauthorized" (kubernetes pkg/kubelet/server/server.go InstallAuthFilter).
// Authenticated: /healthz, and /containerLogs/<ns>/<pod>/<container> from the node's pod log files: the
// container's newest run (`<restart>.log`), the one before with `previous=true`, the last `tailLines` lines
// (pkg/kubelet/server/server.go getContainerLogs; what kube-apiserver forwards `kubectl logs` to).
import { existsSync, readFileSync, readdirSync } from 'node:fs';
import https from 'node:https';
import { join } from 'node:path';
import type { TLSSocket } from 'node:tls';

export function startKubeletServer(
  serving: { cert: string; key: string },
  clientCA: string,
  port: number,
  podLogDir: string,
  address?: string,
): Promise<https.Server> {
  const server = https.createServer({ cert: serving.cert, key: serving.key, ca: [clientCA], requestCert: true, rejectUnauthorized: false }, (req, res) => {
    if (!(req.socket as TLSSocket).authorized) {
      res.writeHead(401, { 'content-type': 'text/plain; charset=utf-8', 'x-content-type-options': 'nosniff' });
      res.end('Unauthorized');
      return;
    }
    const path = new URL(req.url ?? '/', 'https://x').pathname;
    if (path === '/healthz') {
      res.writeHead(200, { 'content-type': 'text/plain; charset=utf-8' });
      res.end('ok');
      return;
    }
    const m = /^\/containerLogs\/([^/]+)\/([^/]+)\/([^/]+)$/.exec(path);
    if (m) {
      const [ns, pod, container] = m.slice(1).map(decodeURIComponent);
      const q = new URL(req.url ?? '/', 'https://x').searchParams;
      const dir = existsSync(podLogDir) ? readdirSync(podLogDir).find((d) => d.startsWith(`${ns}_${pod}_`)) : undefined;
      const cdir = dir ? join(podLogDir, dir, container) : '';
      const runs =
        cdir && existsSync(cdir)
          ? readdirSync(cdir)
              .filter((f) => /^\d+\.log$/.test(f))
              .sort((a, b) => parseInt(a) - parseInt(b))
          : [];
      const file = runs[runs.length - (q.get('previous') === 'true' ? 2 : 1)];
      if (file) {
        // CRI log lines: "<time> <stream> <tag> <line>"; the kubelet serves the line only.
        let lines = readFileSync(join(cdir, file), 'utf8')
          .split('\n')
          .filter(Boolean)
          .map((l) => l.split(' ').slice(3).join(' '));
        const tail = q.get('tailLines');
        if (tail !== null && Number(tail) >= 0) lines = Number(tail) === 0 ? [] : lines.slice(-Number(tail));
        res.writeHead(200, { 'content-type': 'text/plain' });
        res.end(lines.map((l) => `${l}\n`).join(''));
        return;
      }
    }
    res.writeHead(404, { 'content-type': 'text/plain; charset=utf-8', 'x-content-type-options': 'nosniff' });
    res.end('404 page not found\n');
  });
  return new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, address || undefined, () => resolve(server));
  });
}
