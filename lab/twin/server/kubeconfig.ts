// The admin kubeconfig k3s writes (/etc/rancher/k3s/k3s.yaml: server https://127.0.0.1:6443, every name
// `default`, mode 0600 unless write-kubeconfig-mode says otherwise).
import { mkdirSync, readFileSync, writeFileSync, chmodSync } from 'node:fs';
import { dirname } from 'node:path';
import YAML from 'yaml';
import type { TlsPaths } from '../pki.ts';

function kubeconfigYaml(server: string, p: TlsPaths): string {
  const b64 = (f: string) => readFileSync(f).toString('base64');
  return YAML.stringify({
    apiVersion: 'v1',
    kind: 'Config',
    clusters: [{ name: 'default', cluster: { 'certificate-authority-data': b64(p.serverCA), server } }],
    contexts: [{ name: 'default', context: { cluster: 'default', user: 'default' } }],
    'current-context': 'default',
    preferences: {},
    users: [{ name: 'default', user: { 'client-certificate-data': b64(p.admin), 'client-key-data': b64(p.adminKey) } }],
  });
}

export function writeKubeconfig(file: string, server: string, p: TlsPaths, mode: string): void {
  mkdirSync(dirname(file), { recursive: true });
  const m = mode ? parseInt(mode, 8) : 0o600;
  writeFileSync(file, kubeconfigYaml(server, p), { mode: m });
  chmodSync(file, m);
}
