// k3s-remove (`bootstrap <env> --remove NAME[,NAME…]`): the named nodes leave the cluster ONE AT A TIME, agents
// first, then servers, the founder last among them. Before anything changes the precheck (k3s/remove-quorum.ts,
// check mode too) refuses a removal that would cost etcd its quorum at any step; each node is then drained,
// deleted through a surviving server and waited for, and wiped on its host when that answers
// (k3s/remove-steps.ts). Its hosts need not answer SSH: a dead node is removed from the cluster all the same.
import type { Gate, Phase } from '../src/engine/phase.ts';
import { removalOrder } from './k3s/remove-quorum.ts';
import { REMOVE_PHASE, removeSteps } from './k3s/remove-steps.ts';

/** The last word on each node: the inventory still lists it, and the next plain run must not find it there. */
const inventoryNote: Gate = {
  id: 'inventory-note',
  title: 'removed: the inventory still lists it',
  budgetMs: 1_000,
  async run(host, ctx) {
    ctx.emit({
      type: 'warning',
      host: host.name,
      message: `${host.name} is out of the cluster: delete it from ${ctx.inventory.file} (${host.role === 'server' ? 'servers' : 'agents'}${host.founder ? '; mark another server `founder: true`' : ''}) before the next run`,
    });
  },
};

export const k3sRemove: Phase = {
  id: REMOVE_PHASE,
  title: 'remove the named nodes from the cluster, one at a time',
  needs: [],
  hosts: (c) => removalOrder([...c.topology.servers, ...c.topology.agents], c.topology.removing ?? []),
  hostsMayBeDown: true,
  concurrency: 'serial',
  steps: removeSteps,
  gates: [inventoryNote],
};
