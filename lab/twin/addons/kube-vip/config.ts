// kube-vip's configuration from its environment, as kube-vip's ParseEnvironment reads it
// (pkg/kubevip/config_envvar.go): the names the generator writes into the DaemonSet.
export interface KubeVipConfig {
  address: string;
  interfaceName: string;
  subnet: string;
  port: number;
  controlPlane: boolean;
  arp: boolean;
  namespace: string;
  nodeName: string;
  leaderElection: boolean;
  leaseName: string;
  leaseDurationS: number;
  renewDeadlineS: number;
  retryPeriodS: number;
  apiHost: string;
  apiPort: number;
}

const bool = (v: string | undefined) => v === 'true';
const num = (v: string | undefined, d: number) => (v !== undefined && v !== '' && !Number.isNaN(Number(v)) ? Number(v) : d);

export function kubeVipConfig(env: Record<string, string>, node: string): KubeVipConfig {
  return {
    address: env.address ?? env.vip_address ?? '',
    interfaceName: env.vip_interface ?? '',
    // vip_cidr was removed in v0.9.0 and is ignored; vip_subnet defaults to a host address.
    subnet: env.vip_subnet || '32',
    port: num(env.port, 6443),
    controlPlane: bool(env.cp_enable),
    arp: bool(env.vip_arp),
    namespace: env.cp_namespace || 'kube-system',
    nodeName: env.vip_nodename || node,
    leaderElection: bool(env.vip_leaderelection),
    leaseName: env.vip_leasename || 'plndr-cp-lock',
    leaseDurationS: num(env.vip_leaseduration, 5),
    renewDeadlineS: num(env.vip_renewdeadline, 3),
    retryPeriodS: num(env.vip_retryperiod, 1),
    apiHost: env.KUBERNETES_SERVICE_HOST ?? '',
    apiPort: num(env.KUBERNETES_SERVICE_PORT, 443),
  };
}
