// The agent's REST API on its unix socket (/var/run/cilium/cilium.sock, a hostPath, so on the node), as
// `cilium-dbg status` reads it: GET /v1/healthz answers a StatusResponse (cilium api/v1 models) with the
// fields the engine cares about — kube-proxy-replacement.mode and the kubernetes connection (field names and
// shapes: cilium/cilium api/v1/models status_response.go, kube_proxy_replacement.go: `devices` a list of names,
// `deviceList` the devices with their addresses). `cilium-dbg status -o json` inside the agent container (the
// twin's `k3s crictl exec`, lab/twin/crictl.ts) prints this document. One twin-private path, GET
// /twin/v1/container, tells the twin's crictl which container serves the socket (real Cilium has no such path).
import { mkdirSync, rmSync } from 'node:fs';
import http from 'node:http';
import { K3S_VERSION, kubeVersion } from '../../version.ts';
import { dirname } from 'node:path';

export interface AgentStatus {
  kubeProxyReplacement: string; // "True" | "False"
  apiServer: string; // https://host:port
  device: { name: string; ip: string };
  ready: boolean;
}

function statusResponse(s: AgentStatus): any {
  return {
    cilium: { state: s.ready ? 'Ok' : 'Failure', msg: '' },
    'container-runtime': { state: 'Ok', msg: 'containerd' },
    kubernetes: {
      state: s.ready ? 'Ok' : 'Failure',
      // the API server's version as Cilium prints it: "<major>.<minor> (<gitVersion>) [<platform>]"
      msg: `${kubeVersion().major}.${kubeVersion().minor} (${K3S_VERSION}) [linux/amd64]`,
      'k8s-api-versions': [
        'cilium/v2',
        'cilium/v2alpha1',
        'core/v1::Namespace',
        'core/v1::Node',
        'core/v1::Pods',
        'core/v1::Service',
        'discovery/v1::EndpointSlice',
      ],
    },
    'kube-proxy-replacement': {
      mode: s.kubeProxyReplacement,
      devices: [s.device.name],
      deviceList: [{ name: s.device.name, ip: [s.device.ip] }],
      features: {
        nodePort: { enabled: s.kubeProxyReplacement === 'True' },
        hostPort: { enabled: s.kubeProxyReplacement === 'True' },
        externalIPs: { enabled: s.kubeProxyReplacement === 'True' },
        socketLB: { enabled: s.kubeProxyReplacement === 'True' },
      },
    },
    'cni-chaining': { mode: 'none' },
    'client-id': 0,
    stale: {},
    'k8s-endpoint': s.apiServer,
  };
}

/** The container behind the socket, as the twin's crictl lists it (lab/twin/crictl.ts TwinContainer). */
export interface AgentContainer {
  id: string;
  name: string;
  podName: string;
  podNamespace: string;
  podUid: string;
  image: string;
  createdAt: string;
}

/** The container of a pod as the twin's kubelet reports it (containerStatuses[].containerID without `containerd://`). */
export function agentContainer(pod: any, image: string): AgentContainer {
  const fromStatus = String(pod?.status?.containerStatuses?.find((c: any) => c.name === 'cilium-agent')?.containerID ?? '').replace(/^containerd:\/\//, '');
  return {
    id: fromStatus || String(pod?.metadata?.uid ?? '').replace(/-/g, ''),
    name: 'cilium-agent',
    podName: pod?.metadata?.name ?? '',
    podNamespace: pod?.metadata?.namespace ?? '',
    podUid: pod?.metadata?.uid ?? '',
    image,
    createdAt: new Date().toISOString(),
  };
}

export function serveStatus(socketPath: string, status: () => AgentStatus, container?: AgentContainer): { close(): void } {
  mkdirSync(dirname(socketPath), { recursive: true });
  rmSync(socketPath, { force: true });
  const server = http.createServer((req, res) => {
    const path = new URL(req.url ?? '/', 'http://localhost').pathname;
    if (req.method === 'GET' && (path === '/v1/healthz' || path === '/v1/healthz/')) {
      const body = JSON.stringify(statusResponse(status()));
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(body);
      return;
    }
    if (req.method === 'GET' && path === '/twin/v1/container' && container) {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(JSON.stringify(container));
      return;
    }
    res.writeHead(404, { 'content-type': 'text/plain' });
    res.end('404 page not found\n');
  });
  server.on('error', () => undefined);
  server.listen(socketPath);
  return { close: () => server.close() };
}
