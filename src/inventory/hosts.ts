// Which hosts a phase runs on, from the inventory's derived values.
import type { LoadedInventory, Topology } from '../engine/context.ts';
import type { HostRef } from '../engine/phase.ts';

export function serverRefs(inv: LoadedInventory): HostRef[] {
  return inv.derived.servers.map((s) => ({ name: s.name, address: s.address, role: 'server', founder: s.name === inv.derived.founder.name }));
}

export function agentRefs(inv: LoadedInventory): HostRef[] {
  return inv.derived.agents.map((a) => ({ name: a.name, address: a.address, role: 'agent', founder: false }));
}

export function allHostRefs(inv: LoadedInventory): HostRef[] {
  return [...serverRefs(inv), ...agentRefs(inv)];
}

export function founderRef(inv: LoadedInventory): HostRef[] {
  return serverRefs(inv).filter((h) => h.founder);
}

/** The inventory's roles: its founder founds, the other servers join it (modes/ may move the founder role). */
export function topologyOf(inv: LoadedInventory): Topology {
  const servers = serverRefs(inv);
  return { founder: servers.find((s) => s.founder)!, joiners: servers.filter((s) => !s.founder), servers, agents: agentRefs(inv), joinTarget: inv.derived.joinTarget };
}
