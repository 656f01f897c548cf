// Before a rolling change touches any server: which servers run the cluster, whether the step from the
// release each runs to k3s.version is one k3s supports (src/k3s/upgrade-path.ts), whether a server that
// holds a datastore is down while another would be restarted (QUORUM_AT_RISK), and who holds the VIP (it goes
// last). Read-only, check mode too. Probes that cost a k3s process start (`k3s --version`) run only on a
// server whose binary differs from the target, so a converged run pays for none.
import { readFile } from 'node:fs/promises';
import { CauseError } from '../../src/errors.ts';
import type { HostRef, ProbeCommand, ProbeResults } from '../../src/engine/phase.ts';
import { rawGetProbe } from '../../src/k3s/remote.ts';
import type { PrepareContext, ReadContext } from '../../src/engine/context.ts';
import { KUBE_VIP_LEASE, KUBE_VIP_NAMESPACE } from '../../src/addons/kube-vip.ts';
import { DATA_DIR, DB_DIR, K3S_BIN, SERVER_ROLE } from '../../src/k3s/paths.ts';
import { unitActiveProbe, unitRuns } from '../../src/k3s/unit-state.ts';
import { etcdVersionIn, pathStops, releaseEtcd, runningEtcdProbe, type RunningRelease } from '../../src/k3s/upgrade-path.ts';
import { sumsProbe } from '../../src/engine/sum-stamps.ts';
import { sha256FileOnce } from '../../src/util/sha256-file.ts';
import { cordonedByRun, rollingView, targetBinary, type TargetBinary } from './rolling-facts.ts';
import { stateTokenSha, TOKEN_SECRET_PROBE, tokenStops } from '../k3s-founder.ts';
import { cordonedIn } from './rolling-evict.ts';

/** The target release, read once a run (both rolling phases need it). */
export async function prepareTarget(ctx: PrepareContext): Promise<TargetBinary> {
  return ctx.once(targetBinary, async () => {
    const path = ctx.inventory.derived.paths.k3sBinary;
    const version = ctx.inventory.inventory.k3s.version;
    // The whole binary (70 MB) is read only for a release the upgrade-path table does not know.
    const etcd = releaseEtcd(version) ?? etcdVersionIn((await readFile(path)).toString('latin1'));
    return { version, etcd, sha256: await sha256FileOnce(path) };
  });
}

/** The binary's sha256, and only when it differs from the target: its version line and what it says of its etcd. */
function binaryProbe(target: TargetBinary): ProbeCommand {
  return {
    command: [
      // From the binary's upload stamp while it is unchanged (src/engine/sum-stamps.ts): 70 MB not hashed again.
      `s=$(${sumsProbe([K3S_BIN])}); s=\${s%% *}; echo "$s"`,
      `if [ -n "$s" ] && [ "$s" != "${target.sha256}" ]; then ${K3S_BIN} --version 2>/dev/null | head -n1; ${runningEtcdProbe(SERVER_ROLE.unit, [`${DATA_DIR}/data/*/bin/k3s`, K3S_BIN])}; fi; true`,
    ].join('; '),
    sudo: true,
  };
}

/**
 * A GET of the API on the founder while its k3s runs: through the run's connection when it can, else
 * `k3s kubectl get --raw` there (nothing asked on a cold build, where no k3s runs).
 */
const whileActive = (path: string): ProbeCommand => rawGetProbe(path, { onlyIf: `systemctl is-active -q ${SERVER_ROLE.unit}` });

/** Every server's probes; the cluster-wide reads (kube-vip's lease, the Nodes) on the founder only. */
export function serverProbes(target: TargetBinary, onFounder: boolean): Record<string, ProbeCommand> {
  const all: Record<string, ProbeCommand> = {
    active: unitActiveProbe(SERVER_ROLE.unit),
    datastore: { command: `test -d ${DB_DIR}/etcd && echo present`, sudo: true },
    binary: binaryProbe(target),
    tokenSecret: { command: TOKEN_SECRET_PROBE, sudo: true },
  };
  if (!onFounder) return all;
  return {
    ...all,
    // The VIP holder, and each Node with this tool's cordon mark (a rolling change that stopped).
    lease: whileActive(`/apis/coordination.k8s.io/v1/namespaces/${KUBE_VIP_NAMESPACE}/leases/${KUBE_VIP_LEASE}`),
    nodes: whileActive('/api/v1/nodes'),
  };
}

/** What one host's binary probe says: its sha256 and, when it differs, what it runs. */
function runningRelease(host: string, r: ProbeResults): { sha256: string; release?: RunningRelease } {
  const [sha256 = '', versionLine = '', ...rest] = r.binary.stdout.split('\n');
  if (!versionLine) return { sha256: sha256.trim() };
  return { sha256: sha256.trim(), release: { host, versionLine: versionLine.trim(), etcd: etcdVersionIn(rest.join('\n')) } };
}

const isActive = (r: ProbeResults) => unitRuns(r.active.stdout);

export function checkServers(seen: Map<HostRef, ProbeResults>, ctx: ReadContext) {
  const target = ctx.facts.need(targetBinary);
  const holding = [...seen].filter(([, r]) => r.datastore.stdout.trim() === 'present');
  const members = holding.filter(([, r]) => isActive(r));
  const running = members.length >= 2;
  const json = (r: ProbeResults[string] | undefined) => (r?.code === 0 && r.stdout.trim() ? JSON.parse(r.stdout) : undefined);
  const holder = [...seen.values()].map((r) => json(r.lease)?.spec?.holderIdentity as string | undefined).find(Boolean);
  const cordoned = cordonedIn([...seen.values()].flatMap((r) => json(r.nodes)?.items ?? []));
  const view = rollingView({ running, members: members.map(([h]) => h.name), ...(holder && { holder }) });
  // A running founder keeps its token: a state folder without it (or with another) would write a config that
  // k3s refuses to start with — refused before any restart, as k3s-founder's preflight says it (STATE_TOKEN_MISMATCH).
  const founder = holding.find(([h]) => h.name === ctx.topology.founder.name);
  const tokenStop = founder ? tokenStops(founder[0].name, founder[1].tokenSecret.stdout.trim(), ctx.facts.run(stateTokenSha)) : [];
  if (tokenStop.length) return { stops: tokenStop, facts: [view] };
  const facts = [view, cordonedByRun(cordoned)];
  if (!running) return { stops: [], facts };
  const moving = members.map(([h, r]) => runningRelease(h.name, r)).filter((m) => m.sha256 !== target.sha256);
  if (!moving.length) return { stops: [], facts };
  const stops = pathStops(
    moving.flatMap((m) => (m.release ? [m.release] : [])),
    target,
  );
  // A server with a datastore whose k3s is down: restarting another now could take the cluster below quorum.
  const down = holding.filter(([, r]) => !isActive(r));
  if (down.length)
    stops.push(
      new CauseError('QUORUM_AT_RISK', {
        host: down.map(([h]) => h.name).join(', '),
        message: `${down.map(([h]) => h.name).join(', ')} hold${down.length === 1 ? 's' : ''} an etcd datastore but k3s is not running: restarting another server for the upgrade could stop the cluster`,
        evidence: {
          command: unitActiveProbe(SERVER_ROLE.unit).command,
          seen: [...seen]
            .map(([h, r]) => `${h.name}: ${r.active.stdout.trim() || 'no answer'}${r.datastore.stdout.trim() === 'present' ? ' (datastore present)' : ''}`)
            .join('; '),
        },
      }),
    );
  return { stops, facts };
}

/**
 * The VIP holder last (its lease is handed over before its k3s restarts), the others in inventory order; no host
 * at all when no cluster runs (a cold build): there is nothing to roll, and no host pays for the probes.
 */
export function holderLast(hosts: HostRef[], ctx: ReadContext): HostRef[] {
  const view = ctx.facts.run(rollingView);
  if (!view?.running) return [];
  return [...hosts.filter((h) => h.name !== view.holder), ...hosts.filter((h) => h.name === view.holder)];
}

/** The agents of a running cluster; none on a cold build (nothing to roll). */
export function whenRunning(hosts: HostRef[], ctx: ReadContext): HostRef[] {
  return ctx.facts.run(rollingView)?.running ? hosts : [];
}
