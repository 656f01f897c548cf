// Pure: a Cilium agent's live status (`cilium-dbg status -o json` in the agent container: its API's
// /v1/healthz StatusResponse, cilium/cilium api/v1/models) reduced to kube-proxy replacement on or not.
export function kprMode(statusJson: string): string | undefined {
  try {
    const doc = JSON.parse(statusJson);
    const mode = doc?.['kube-proxy-replacement']?.mode;
    return typeof mode === 'string' ? mode : undefined;
  } catch {
    return undefined;
  }
}

/** Cilium reports "True" (newer) or "Strict" (older releases) when it replaces kube-proxy. */
export function kprOn(mode: string | undefined): boolean {
  return mode === 'True' || mode === 'Strict';
}
