// The add-on images the engine itself pins (the rest come from the Cilium chart and the Flux install manifest).

/** NOTE: vip_cidr was removed in v0.9.0 (silently ignored); the kube-vip manifest uses vip_subnet, so >= v0.9.0. */
export const KUBE_VIP_IMAGE = 'ghcr.io/kube-vip/kube-vip:v0.9.2';
