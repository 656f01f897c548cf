import { defineCauses } from './define.ts';

// Cilium: values from the GitOps HelmRelease, their gates, the HelmChart install and its rollout (phases/cilium/*.ts).
export const ciliumCauses = defineCauses({
  GITOPS_SOURCE_INVALID: {
    title: 'The GitOps checkout cannot be read for this environment',
    meaning: 'The HelmRelease, the cluster-vars ConfigMap or a kustomization/patch of gitops.path is missing, malformed or does not apply. The file is named.',
    remedy:
      'Fix the named file in the GitOps repository (kustomize build <gitops.path> shows most of the same), or point the inventory at the right file: gitops.checkout, gitops.path, cilium.helmRelease.',
  },
  UNRESOLVED_SUBSTITUTION: {
    title: 'A ${VAR} in the Cilium HelmRelease has no usable value for this environment',
    meaning:
      'The variable is not defined by the effective cluster-vars, is empty, or is a TBD placeholder. Flux would ship an empty or wrong value (the 2026-09-01 incident); nothing was installed.',
    remedy:
      'Define the variable with its real value in the cluster-vars of this environment (the evidence lists the files its variables are read from), commit, and rerun.',
  },
  CHART_VERSION_MISMATCH: {
    title: 'The Cilium chart in the artifacts is not the version the HelmRelease pins',
    meaning: 'Flux would upgrade (or downgrade) Cilium right after adopting it: the bootstrap and GitOps would install different charts.',
    remedy: 'Put the chart tgz of the pinned version in the artifacts (cilium.chart), or change the HelmRelease version, so they agree.',
  },
  SERVICE_HOST_NOT_VIP: {
    title: "Cilium's k8sServiceHost is not the control-plane VIP",
    meaning:
      'Empty, a node address or anything else: empty makes agents dial the `kubernetes` ClusterIP, the first address of k3s.serviceCidr (deadlock without kube-proxy); a node address ties the CNI to one server.',
    remedy: 'Make k8sServiceHost resolve to controlPlane.vip for this environment (K3S_API_HOST in cluster-vars).',
  },
  SERVICE_PORT_MISMATCH: {
    title: "Cilium's k8sServicePort is not the control-plane port",
    meaning: 'Agents would dial the VIP on a port the API server does not listen on.',
    remedy: 'Set k8sServicePort to controlPlane.port (6443 by default) in the HelmRelease.',
  },
  KPR_MISMATCH: {
    title: 'Cilium is not configured to replace kube-proxy',
    meaning: 'k3s runs with disable-kube-proxy, so without kubeProxyReplacement: true no one implements Services (the chart default is "false").',
    remedy:
      'Set kubeProxyReplacement: true in the HelmRelease values and rerun bootstrap; a running agent that still does not replace kube-proxy (bootstrap verify <env> names it) takes the value when its pod restarts.',
  },
  POD_CIDR_MISMATCH: {
    title: "Cilium's pod CIDR is not k3s's cluster-cidr",
    meaning: 'In cluster-pool IPAM Cilium allocates pod addresses from ipam.operator.clusterPoolIPv4PodCIDRList (chart default 10.0.0.0/8), ignoring k3s.',
    remedy: 'Set ipam.operator.clusterPoolIPv4PodCIDRList to [k3s.clusterCidr] (or ipam.mode: kubernetes) in the HelmRelease.',
  },
  ROLLOUT_TOO_WIDE: {
    title: "Cilium's agent rollout may take down more than one node at once",
    meaning:
      'updateStrategy.rollingUpdate.maxUnavailable is not 1 (the chart default is 2): one bad render can cost two of three nodes (the 2026-09-01 incident).',
    remedy: 'Set updateStrategy.rollingUpdate.maxUnavailable: 1 in the HelmRelease values.',
  },
  CGROUP_HOSTROOT_NOT_CGROUP2: {
    title: "Cilium's cgroup.hostRoot is not a cgroup2 mount on a node",
    meaning:
      "Socket load-balancing attaches to the cgroup at hostRoot; anything but the host's cgroup2 root leaves host processes untranslated (the 2026-10-03 breakage).",
    remedy: 'Point cgroup.hostRoot at /sys/fs/cgroup with cgroup.autoMount.enabled: false (the host mounts cgroup2 there), or let autoMount mount it.',
  },
  VALUES_SCHEMA_INVALID: {
    title: "The Cilium values do not satisfy the chart's values.schema.json",
    meaning: 'Helm would refuse the install; the path and the schema message are named.',
    remedy: "Fix the value at the path named in the HelmRelease (compare with the chart's values.yaml of the pinned version).",
  },
  CILIUM_SERVICE_HOST_FALLBACK: {
    title: 'A Cilium agent fell back to the Kubernetes ClusterIP',
    meaning:
      'The agent logged an i/o timeout to the `kubernetes` ClusterIP (the first address of k3s.serviceCidr, 10.43.0.1 by default) on port 443: it runs without KUBERNETES_SERVICE_HOST, so it cannot reach the API server without kube-proxy.',
    remedy:
      "Check k8sServiceHost in the installed values (the HelmChart's spec.valuesContent: kubectl -n kube-system get helmchart -o yaml; once Flux owns Cilium, the HelmRelease's spec.values) and the agent pod env; rerun bootstrap to reinstall with the VIP.",
  },
  CILIUM_API_UNREACHABLE: {
    title: 'A Cilium pod cannot reach the API server at the address it dials',
    meaning:
      "Cilium's k8s client (first in the config init container, `cilium-dbg build-config`, then the agent) tried for a minute and logged `Unable to contact k8s api-server` with the dial or TLS error; the pod stays in Init:CrashLoopBackOff (or CrashLoopBackOff). The evidence names the pod, the container and the address.",
    remedy:
      'From the named node, reach the address it dials with bash, as a stock host has no curl (timeout 3 bash -c "</dev/tcp/<host>/<port>" && echo open, the host and port of that address): check that the VIP is announced (kube-vip lease), that no firewall drops 6443 between the node and the VIP, and that the certificate covers the VIP; then delete the failing pod or rerun.',
  },
  CILIUM_NODE_UNREACHABLE: {
    title: "Cilium's health probe from one node cannot reach another",
    meaning:
      "cilium-health in the named node's agent (its report, cilium-health status) failed to greet another node, again in a probe made after verify first saw the failure: on the node's address (4240/tcp, cluster health checks) or, through the pod network, its health endpoint (VXLAN 8472/udp). The evidence names each pair, the address, the ports and when it was probed; pods on those nodes cannot talk either.",
    remedy:
      'Open 8472/udp (VXLAN) and 4240/tcp (cilium-health) between every pair of nodes, and ICMP echo (see the firewall table in the README); then rerun bootstrap verify <env> (Cilium probes each pair once a round: a fixed path shows at its next probe).',
  },
  CILIUM_HEALTH_NOT_REPORTED: {
    title: "Cilium's health report has no result for a node",
    meaning:
      "The named node's cilium-health published no probe of another node within the budget: the node is not in its report, or listed without a result. Cilium probes every node once a round (60 s x ln(1 + the addresses probed) at its default ratio) and publishes once a round or every 60 s, so a node it has just learnt of shows late; one missing for longer is a node its agent does not know, or a prober that has stopped.",
    remedy:
      'On the named node: kubectl -n kube-system exec <its cilium agent> -- cilium-health status (what it probed, and when); kubectl get ciliumnodes (the nodes Cilium knows); read that agent log; then rerun bootstrap verify <env>.',
  },
  CILIUM_AGENTS_NOT_READY: {
    title: 'The cilium DaemonSet did not roll out on every node within its budget',
    meaning:
      'Some agents are not Ready, or the HelmChart this run wrote was not installed (no newer Helm release revision deployed). The evidence names them with their last log lines, or the release revisions.',
    remedy:
      'kubectl -n kube-system get pods -l k8s-app=cilium -o wide; read the named agent logs (cilium-dbg status inside the pod). When the evidence says the HelmChart was not installed, read its install job: kubectl -n kube-system logs job/helm-install-<release>.',
  },
  NODE_NOT_READY: {
    title: 'A node did not become Ready after Cilium rolled out',
    meaning: "The node's Ready condition stayed false (the reason is in the evidence), although its agent runs.",
    remedy: 'kubectl describe node <name>; journalctl -u k3s on the node (k3s-agent on an agent).',
  },
  AGENT_SERVICE_HOST_DRIFT: {
    title: "A running Cilium agent's KUBERNETES_SERVICE_HOST is not the VIP",
    meaning:
      'Live, not from the template: the agent pod dials another address (a node address, or nothing) than controlPlane.vip, so the CNI depends on one node.',
    remedy: 'Reinstall with the rendered values (rerun bootstrap) and restart the named agent pods; check no other Cilium release or manual edit sets the env.',
  },
});
