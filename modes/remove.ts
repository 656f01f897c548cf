// `bootstrap <env> --remove NAME[,NAME…] [--allow-even]`: the named nodes leave the cluster in one run while the
// inventory still lists them (phases/k3s-remove.ts). Refused before any host is dialled when a name is no node
// of the inventory, when every server would go (QUORUM_AT_RISK), or when an even number of servers would stay
// (SERVER_COUNT_EVEN, unless --allow-even); the quorum at each step is judged by the precheck, which reads the
// live cluster (check mode too).
import { CauseError, stopOf, UsageError } from '../src/errors.ts';
import type { RunPlan } from '../src/engine/session.ts';
import type { LoadedInventory } from '../src/inventory/load.ts';
import { allHostRefs, topologyOf } from '../src/inventory/hosts.ts';
import { k3sRemove } from '../phases/k3s-remove.ts';
import { checkRemoval, removalOrder } from '../phases/k3s/remove-quorum.ts';

export interface RemoveOptions {
  check: boolean;
  allowEven: boolean;
}

export function removeRun(loaded: LoadedInventory, names: string[], opts: RemoveOptions): RunPlan {
  const hosts = allHostRefs(loaded);
  const unknown = names.filter((n) => !hosts.some((h) => h.name === n));
  if (unknown.length) throw new UsageError(`--remove ${unknown.join(',')}: not a node of the inventory (nodes: ${hosts.map((h) => h.name).join(', ')})`);
  const order = removalOrder(hosts, names);
  const stop = endStateStop(
    loaded,
    order.map((h) => h.name),
    opts.allowEven,
  );
  if (stop) throw stopOf([stop]);
  const warnings = loaded.warnings.filter((w) => w.path !== 'servers').map((w) => `${w.path}: ${w.message}`);
  return {
    phases: [k3sRemove],
    topology: { ...topologyOf(loaded), removing: order.map((h) => h.name) },
    check: opts.check,
    resume: false,
    warnings,
    precheck: checkRemoval,
  };
}

/** Pure: the end state refused before any host is dialled: no server left, or an even count without --allow-even. */
export function endStateStop(loaded: LoadedInventory, removing: string[], allowEven: boolean): CauseError | undefined {
  const servers = loaded.derived.servers.map((s) => s.name);
  const left = servers.filter((s) => !removing.includes(s));
  if (!left.length)
    return new CauseError('QUORUM_AT_RISK', {
      host: servers.join(', '),
      message: `--remove names every server (${servers.join(', ')}): no etcd member would be left to hold the cluster`,
      evidence: { seen: `servers of the inventory: ${servers.join(', ')}; to remove: ${removing.join(', ')}` },
    });
  if (left.length % 2 === 0 && !allowEven)
    return new CauseError('SERVER_COUNT_EVEN', {
      host: left.join(', '),
      message: `${left.length} servers would stay (${left.join(', ')}): an even count tolerates no more failures than ${left.length - 1}`,
      evidence: { seen: `servers after the removal: ${left.join(', ')}` },
      remedy: `Remove one server more or one fewer so that an odd number stays, or give --allow-even to accept ${left.length} servers for this run (and later runs of that inventory).`,
    });
  return undefined;
}
