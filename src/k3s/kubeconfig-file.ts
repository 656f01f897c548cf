// The operator's copy of the admin kubeconfig, as written to the state folder: k3s's file with the server
// set to the VIP and, when the nodes sit behind a bastion, comment lines on top saying how to reach the API
// from the operator's machine (src/kube/bastion-access.ts). Comments are YAML, so every kubeconfig reader
// (kubectl, client libraries, the engine's own client) reads the same document.
import { homedir } from 'node:os';
import { join } from 'node:path';
import { stringify } from 'yaml';
import type { LoadedInventory } from '../inventory/load.ts';
import { bastionAccess, type BastionAccess } from '../kube/bastion-access.ts';

export const kubeconfigPath = (stateDir: string) => join(stateDir, 'kubeconfig');

export function withAccessComment(yamlText: string, access: BastionAccess | undefined): string {
  return access ? `${access.comment.join('\n')}\n${yamlText}` : yamlText;
}

/** How to reach the API from the operator's machine, when the inventory has a bastion. */
function accessFor(inventory: LoadedInventory, stateDir: string, home = homedir()): BastionAccess | undefined {
  return bastionAccess({ inventory: inventory.inventory, derived: inventory.derived, kubeconfig: kubeconfigPath(stateDir), home });
}

/** The text written: the document dialling the VIP, with the bastion's instructions when there is one. */
export function operatorKubeconfig(doc: unknown, inventory: LoadedInventory, stateDir: string): string {
  return withAccessComment(stringify(doc), accessFor(inventory, stateDir));
}
