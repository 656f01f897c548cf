// `k3s kubectl …` runs the real kubectl with the k3s kubeconfig unless KUBECONFIG is set (k3s pkg/kubectl).
// On a lab host that is Debian's kubectl, moved off the PATH (tools.ts): a stock host has no kubectl of
// its own, and real k3s carries its kubectl inside the one binary.
import { spawnSync } from 'node:child_process';
import { existsSync, realpathSync } from 'node:fs';
import { delimiter, join } from 'node:path';
import { LAB_TOOLS_DIR } from './tools.ts';

function findKubectl(): string | undefined {
  const self = realpathSync(process.argv[1] ?? '');
  for (const dir of [LAB_TOOLS_DIR, ...(process.env.PATH ?? '').split(delimiter)]) {
    const f = join(dir, 'kubectl');
    if (existsSync(f) && realpathSync(f) !== self) return f;
  }
  return undefined;
}

export function runKubectl(args: string[]): never {
  const bin = findKubectl();
  if (!bin) {
    process.stderr.write('kubectl not found\n');
    process.exit(1);
  }
  const env = { ...process.env, KUBECONFIG: process.env.KUBECONFIG ?? '/etc/rancher/k3s/k3s.yaml' };
  const r = spawnSync(bin, args, { stdio: 'inherit', env });
  process.exit(r.status ?? 1);
}
