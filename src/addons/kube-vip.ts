// kube-vip as the engine installs it, named once for every phase that looks at it (the kube-vip phase
// renders and waits for it; verify reads its lease and drills its failover).

export const KUBE_VIP_NAMESPACE = 'kube-system';
export const KUBE_VIP_DAEMONSET = 'kube-vip-ds';
export const KUBE_VIP_LEASE = 'plndr-cp-lock';

/** Lease timing in seconds (the values the issue fixes: 15 s lease, 10 s renew deadline, 2 s retry). */
export const LEASE_TIMING = { duration: 15, renewDeadline: 10, retryPeriod: 2 } as const;
