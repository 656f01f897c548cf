// Gates that the environment (not the operator's mistake) may be unable to satisfy, e.g. a lab
// machine with a cgroup v1/v2 hybrid. Such a gate can be waived in the inventory, with a reason;
// every run prints the waivers it honours. Anything else cannot be waived: it would hide a real fault.
export const WAIVABLE_CAUSES = ['CGROUP_V2_MISSING', 'KERNEL_TOO_OLD', 'MODULE_MISSING', 'BPFFS_MISSING'] as const;

export type WaivableCauseId = (typeof WAIVABLE_CAUSES)[number];

export function isWaivable(id: string): id is WaivableCauseId {
  return (WAIVABLE_CAUSES as readonly string[]).includes(id);
}
