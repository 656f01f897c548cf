// A Node's deletion and the reads that wait for it to be gone, as the day-2 steps (remove, replace, reset) send
// them: through the run's SSH connection to a server that stays, at its 127.0.0.1:6443 (src/kube/api-read.ts),
// so no k3s process is started on that server for each look of a wait; `k3s kubectl` there, with the same
// arguments, when the state folder holds no usable kubeconfig.
import type { ApiRead } from '../../src/kube/api-read.ts';

/** Deleted normally, never forced: k3s's finalizer removes a server's etcd member before the Node goes. */
export const nodeDelete = (name: string): ApiRead => ({ path: `/api/v1/nodes/${name}`, kubectl: `delete node ${name} --ignore-not-found --timeout=90s` });

/** A server's own readiness, as its API answers it (`ok`): who may serve the removal. */
export const READYZ: ApiRead = { path: '/readyz', kubectl: "get --raw='/readyz'" };

export const nodeRead = (name: string): ApiRead => ({ path: `/api/v1/nodes/${name}`, kubectl: `get node ${name} -o name --request-timeout=5s` });

/** A look at the Node in words: its kubectl name while it is there, else what the read said. */
export function nodeSeen(name: string, r: { code: number | null; stdout: string; stderr: string } | undefined): string {
  if (!r) return 'no answer';
  return r.code === 0 ? `node/${name}` : r.stderr.trim() || r.stdout.trim() || `exit ${r.code}`;
}
