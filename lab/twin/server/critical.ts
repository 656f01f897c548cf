// The arguments every server must share (k3s pkg/daemons/config/types.go CriticalControlArgs; compared in
// pkg/cluster/bootstrap.go: one warning "critical configuration mismatched: <cli flag>" per difference,
// then the error "critical configuration value mismatch between servers").
import { type Settings, bool, list, str } from '../config.ts';

export type CriticalArgs = Record<string, string>;

const DEFAULTS: Record<string, string> = {
  'cluster-cidr': '10.42.0.0/16',
  'service-cidr': '10.43.0.0/16',
  'cluster-dns': '10.43.0.10',
  'cluster-domain': 'cluster.local',
  'flannel-backend': 'vxlan',
  'egress-selector-mode': 'agent',
  'secrets-encryption-provider': 'aescbc',
};
const BOOLEANS = ['disable-cloud-controller', 'disable-helm-controller', 'disable-network-policy', 'secrets-encryption',
  'embedded-registry', 'flannel-ipv6-masq', 'flannel-external-ip', 'supervisor-metrics'];

export function criticalArgs(s: Settings): CriticalArgs {
  const out: CriticalArgs = {};
  for (const [k, d] of Object.entries(DEFAULTS)) out[k] = str(s, k, d);
  for (const k of BOOLEANS) out[k] = String(bool(s, k));
  // servicelb is disabled through `disable: [servicelb]`; k3s compares it as its own field.
  out['disable-servicelb'] = String(list(s, 'disable').includes('servicelb'));
  return out;
}

/** Flags whose values differ, in a stable order. */
export function mismatched(ours: CriticalArgs, theirs: CriticalArgs): string[] {
  return Object.keys(ours).filter((k) => theirs[k] !== undefined && theirs[k] !== ours[k]);
}
