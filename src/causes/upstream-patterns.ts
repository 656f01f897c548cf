// The patterns the engine applies to upstream's words (k3s's journal and CLI output, kube-vip's and Cilium's
// logs, Flux's conditions, kubectl's, sudo's and ssh2's errors) to name a cause. Every module that holds one
// exports them as `UPSTREAM_PATTERNS` of this shape: test/unit/cause-matchers-exercised.test.ts gathers the
// export of every module in phases/ and src/, holds each pattern to a line upstream really prints
// (test/fixtures/upstream-lines/*.txt), and fails on a pattern in upstream's words that no export holds.

/** What a pattern built for a cluster depends on (the recorded lines come from k3s's defaults). */
export interface PatternSite {
  /** The `kubernetes` Service's ClusterIP (10.43.0.1 on k3s's default service network). */
  kubernetesIp: string;
}

type Patterns = RegExp | readonly RegExp[];

export type UpstreamPatterns = Readonly<Record<string, Patterns | ((site: PatternSite) => Patterns)>>;
