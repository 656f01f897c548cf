// The node passwords a restored datastore holds. k3s keeps the hash of each node's password in the Secret
// kube-system/<node>.node-password.k3s and refuses a node that presents another password (403, "Node
// password rejected, …" on the node: k3s-io/k3s pkg/nodepassword/nodepassword.go Ensure,
// pkg/nodepassword/validate.go GetNodeAuthValidator). A reinstalled host makes a new password
// (/etc/rancher/node/password), so the snapshot's Secrets are stale for every reinstalled node:
// - an agent asks a remote server, which checks the Secret: refused until the Secret goes;
// - a server's own agent asks its own supervisor before the apiserver is up and is verified locally
//   (k3s #3435); the Secret is checked later and a mismatch is only a Warning Event
//   (NodePasswordValidationFailed), and the stale Secret stays.
// So once the founder serves the restored datastore, and before any other node rejoins, the restore deletes
// those Secrets: Ensure then records each node's current password when it registers again. Only the
// Secret: deleting a server's Node would make k3s remove its etcd member, and nothing else stands in the
// way (k3s deletes the Secret with its Node, never the other way round).
import type { Change } from '../../src/engine/changes.ts';
import type { Step } from '../../src/engine/phase.ts';
import type { Backup } from '../../src/backup/store.ts';
import { shq } from '../../src/util/shell.ts';
import { allHostRefs } from '../../src/inventory/hosts.ts';
import { forgotNodePasswords, restoredNow } from './facts.ts';
import { K3S_BIN, SERVER_ROLE } from '../../src/k3s/paths.ts';
import { RESTORE_MARKER, markedWith, markerProbe } from './restore-marker.ts';

const nodePasswordSecret = (node: string) => `${node.toLowerCase()}.node-password.k3s`;
/** A node-password Secret in a backup's object inventory (kind/namespace/name). */
export const isNodePasswordObject = (key: string) => /^Secret\/kube-system\/[^/]+\.node-password\.k3s$/.test(key);

const READY_WAIT_S = 60;
const LIST_WAIT_S = 30;
const list = `${K3S_BIN} kubectl get secrets -n kube-system -o jsonpath='{range .items[*]}{.metadata.name} {.metadata.creationTimestamp}{"\\n"}{end}' 2>/dev/null`;

/** Secret name → creation time (s), from `name timestamp` lines. */
function secretTimes(listing: string): Map<string, number> {
  const out = new Map<string, number>();
  for (const line of listing.split('\n')) {
    const [name, ts] = line.trim().split(/\s+/);
    const t = Date.parse(ts ?? '');
    if (name && !Number.isNaN(t)) out.set(name, t / 1000);
  }
  return out;
}

export function forgetNodePasswordsStep(backup: Backup): Step {
  const id = backup.manifest.id;
  return {
    id: 'restore-node-passwords',
    title: `forget the node passwords backup ${id} holds (a reinstalled host has a new one)`,
    probe: () => ({
      marker: markerProbe,
      restoredAt: { command: `stat -c %Y ${RESTORE_MARKER} 2>/dev/null || true`, sudo: true },
      // Read-only; k3s may have just started here (this step runs right after the service step): while it
      // runs, the listing is tried for up to LIST_WAIT_S.
      secrets: {
        command: `sh -c ${shq(`i=0; until ${list}; do systemctl is-active --quiet ${SERVER_ROLE.unit} && [ $i -lt ${LIST_WAIT_S} ] || exit 1; i=$((i+1)); sleep 1; done`)}`,
        sudo: true,
      },
    }),
    plan: ({ host, probe, ctx }) => {
      const nodes = allHostRefs(ctx.inventory).map((h) => h.name);
      let stale: string[];
      if (!markedWith(probe.marker.stdout, id) || ctx.facts.get(host.name, restoredNow) === true) {
        // The restore happens in this run: every Secret the snapshot holds is the old hosts'.
        stale = nodes;
      } else if (probe.secrets.code !== 0) {
        // Restored, but the API does not answer: the restore-complete gate names that.
        stale = [];
      } else {
        // Restored already: a Secret older than the restore came from the snapshot; a newer one is a node's
        // own, recorded when it registered again.
        const restoredAt = Number(probe.restoredAt.stdout.trim());
        const times = secretTimes(probe.secrets.stdout);
        stale = nodes.filter((n) => (times.get(nodePasswordSecret(n)) ?? Infinity) < restoredAt);
      }
      if (!stale.length) return { changes: [] };
      const del = `${K3S_BIN} kubectl delete secret -n kube-system --ignore-not-found ${stale.map(nodePasswordSecret).join(' ')}`;
      // Waits for the restored API (it has just started), within a budget.
      const command = `sh -c ${shq(`i=0; until ${K3S_BIN} kubectl get --raw=/readyz >/dev/null 2>&1 || [ $i -ge ${READY_WAIT_S} ]; do i=$((i+1)); sleep 1; done; ${del}`)}`;
      const change: Change = {
        kind: 'command',
        description: `delete the node-password Secrets of ${stale.join(', ')} (from the backup; each node records its current password when it registers again)`,
        command,
        sudo: true,
        timeoutMs: (READY_WAIT_S + 60) * 1000,
      };
      return { changes: [change], facts: [forgotNodePasswords(stale)] };
    },
  };
}
