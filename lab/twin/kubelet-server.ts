// The kubelet's HTTPS port of an agent (:10250; k3s runs the kubelet inside `k3s agent`, so the listener
// belongs to k3s-agent.service). It serves with the node's serving certificate and authenticates clients
// by a certificate of the cluster's client CA; k3s runs the kubelet with --anonymous-auth=false, so any
// other request gets 401 "Unauthorized" (kubernetes pkg/kubelet/server/server.go InstallAuthFilter).
// Authenticated: /healthz, and /containerLogs/<ns>/<pod>/<container> from the node's pod log files.
import { existsSync, readFileSync, readdirSync } from 'node:fs';
import https from 'node:https';
import { join } from 'node:path';
import type { TLSSocket } from 'node:tls';

export function startKubeletServer(serving: { cert: string; key: string }, clientCA: string, port: number, podLogDir: string, address?: string): Promise<https.Server> {
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
      const dir = existsSync(podLogDir) ? readdirSync(podLogDir).find((d) => d.startsWith(`${ns}_${pod}_`)) : undefined;
      const file = dir ? join(podLogDir, dir, container, '0.log') : '';
      if (file && existsSync(file)) {
        // CRI log lines: "<time> <stream> <tag> <line>"; the kubelet serves the line only.
        const body = readFileSync(file, 'utf8').split('\n').filter(Boolean).map((l) => `${l.split(' ').slice(3).join(' ')}\n`).join('');
        res.writeHead(200, { 'content-type': 'text/plain' });
        res.end(body);
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
