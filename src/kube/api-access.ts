// The engine's way to the Kubernetes API during a run: the state folder's admin kubeconfig, dialling a
// local port forwarded through the SSH connection the run already holds to a server (its 127.0.0.1:6443,
// a SAN of the API's certificate, so TLS verifies against the cluster CA — never skipped). One tunnel per
// run and host, opened when first asked for and kept for the rest of the run. The Remote contract has no
// close hook, so the tunnel is not closed with the connection: its listener and connections are unref'd
// (they keep no process alive), and once the connection is closed a new request through it fails to
// forward (SSH_FORWARD_FAILED, see forwardFailure) instead of hanging.
import type { KubeConfig } from '@kubernetes/client-node';
import type { RunContext } from '../engine/context.ts';
import type { HostRef } from '../engine/host-ref.ts';
import { CauseError } from '../errors.ts';
import { kubeconfigPath } from '../k3s/kubeconfig-file.ts';
import type { Remote } from '../transport/types.ts';
import { apiCredentials } from './admin-credentials.ts';
import { kubeConfigFor } from './client.ts';
import { openTunnel, type Tunnel } from './tunnel.ts';

/** Per run and host: a run's connections are its own objects, so the memo ends with them. */
const opened = new WeakMap<Remote, Promise<KubeConfig>>();
const tunnelOf = new WeakMap<KubeConfig, Tunnel>();

/** The admin kubeconfig, dialling `port` on this machine; its absence or damage as a named cause. */
function adminKubeConfig(stateDir: string, port: number): KubeConfig {
  // The causes the engine's own GETs name (no file yet, unreadable, no cluster CA, no client credentials).
  apiCredentials(stateDir);
  try {
    return kubeConfigFor(stateDir, { tunnelPort: port });
  } catch (err) {
    throw new CauseError('STATE_FILE_CORRUPT', {
      message: 'The state folder kubeconfig cannot be used',
      cause: err,
      evidence: { seen: `${kubeconfigPath(stateDir)} is not a kubeconfig: ${(err as Error).message}` },
    });
  }
}

/**
 * The Kubernetes API as seen through `via`'s SSH connection (a server): a KubeConfig for
 * `kc.makeApiClient(…)`. The same one for every call of a run with the same host.
 */
export function clusterApi(ctx: Pick<RunContext, 'remote' | 'stateDir'>, via: HostRef): Promise<KubeConfig> {
  const remote = ctx.remote(via);
  let pending = opened.get(remote);
  if (!pending) {
    pending = (async () => {
      const tunnel = await openTunnel(remote, undefined, { unref: true });
      try {
        const kc = adminKubeConfig(ctx.stateDir, tunnel.port);
        tunnelOf.set(kc, tunnel);
        return kc;
      } catch (err) {
        await tunnel.close();
        throw err;
      }
    })();
    opened.set(remote, pending);
    // A failure is not kept: the next ask (a fixed kubeconfig, a later step) tries again.
    pending.catch(() => opened.delete(remote));
  }
  return pending;
}

/**
 * Why the last request through `kc`'s tunnel could not be forwarded by the SSH connection (a CauseError
 * SSH_FORWARD_FAILED naming the host), for a client that got no answer; undefined when it was forwarded.
 */
export function forwardFailure(kc: KubeConfig): unknown {
  return tunnelOf.get(kc)?.failure();
}
