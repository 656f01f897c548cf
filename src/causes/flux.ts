import { defineCauses } from './define.ts';

// Flux: its install, the sync objects, the wait for Ready with the root cause named, and the hand-over of
// Cilium from the bootstrap's HelmChart to Flux's HelmRelease (phases/flux.ts, phases/flux/*.ts).
export const fluxCauses = defineCauses({
  FLUX_INSTALL_INVALID: {
    title: 'The Flux install manifest (flux.install) cannot be used',
    meaning:
      'It is not valid YAML, holds an object without apiVersion/kind/name, or defines no CustomResourceDefinition for GitRepository and Kustomization: it is not what `flux install --export` prints. Nothing was applied.',
    remedy: 'Regenerate it with `flux install --export > <flux.install>` for the Flux version you run, and rerun.',
  },
  FLUX_DEPLOY_KEY_UNUSABLE: {
    title: 'The deploy key (flux.deployKeyFile) cannot be given to Flux',
    meaning:
      'It is not an unencrypted SSH private key (or is passphrase-protected): the source-controller could not use it. Nothing was applied; the key itself is never printed.',
    remedy: 'Point flux.deployKeyFile at the unencrypted private deploy key (ssh-keygen -t ed25519 -N "" -f <file>; give the server its .pub), and rerun.',
  },
  FLUX_CRDS_NOT_ESTABLISHED: {
    title: "Flux's CustomResourceDefinitions did not become Established within the budget",
    meaning: 'The API server has not accepted the names of the CRDs named in the evidence, so GitRepository and Kustomization objects cannot be created yet.',
    remedy: 'kubectl get crd <name> -o yaml (its conditions say why: a name conflict, a conversion webhook); fix it and rerun with --only flux.',
  },
  FLUX_CONTROLLER_CRASHLOOP: {
    title: 'A Flux controller is crash-looping',
    meaning:
      "The named controller's container exits at every start: kubelet restarts it after a back-off that doubles each time (CrashLoopBackOff, 10 s up to 5 min), and nothing that controller reconciles moves meanwhile (source-controller: no GitRepository is fetched; kustomize-controller: no Kustomization is applied; helm-controller: no HelmRelease). The evidence holds its exit code and the last lines it logged; waiting longer only lengthens the back-off, so the wait stops at once.",
    remedy:
      "Read the log lines: `unable to load feature gates` (`feature-gate '<name>' not supported`) or `unknown flag` is an argument of its Deployment this controller version does not know — remove it from flux.install (or undo the patch applied to the Deployment: `kubectl -n flux-system edit deployment <controller>`); exit 137 / OOMKilled: raise its memory limit. `kubectl -n flux-system logs <pod> -c manager --previous` shows more. Once its pod is Running (`kubectl -n flux-system get pods`), rerun with --only flux.",
  },
  FLUX_SOURCE_NOT_READY: {
    title: 'Flux cannot fetch the GitOps repository',
    meaning:
      "The flux-system GitRepository is not Ready; its message says why: the deploy key is refused (AuthenticationFailed), the server's host key is not in known_hosts, the branch does not exist, the server cannot be reached.",
    remedy:
      'Give the server the deploy key (flux.deployKeyFile .pub) with read access, put its host key in flux.knownHostsFile, check gitops.url and gitops.branch, and rerun with --only flux.',
  },
  FLUX_DEPENDENCY_NOT_READY: {
    title: 'A Flux Kustomization waits on a dependency that fails',
    meaning:
      'The named Kustomization is the ROOT of a dependsOn chain: it is not Ready and nothing it depends on is the reason, so every Kustomization depending on it waits. Its own reason and message are in the evidence.',
    remedy:
      'kubectl -n flux-system describe kustomization <root>; fix what its message says in the GitOps repository (a root that does not exist: add it, or fix the dependsOn name), push, and rerun with --only flux.',
  },
  FLUX_CRD_NOT_INSTALLED: {
    title: 'A Flux Kustomization applies a custom resource before its CRD exists',
    meaning:
      'The dry-run of the Kustomization failed with `no matches for kind`: the CRD is created by a controller at runtime (or by a later tier), and since one unknown kind aborts the whole pass the CRD is never made — a deadlock, not a race (the platform-config-cdi lesson).',
    remedy:
      'Move the named custom resource into a later Kustomization that dependsOn the one installing (or creating) its CRD, push, and rerun with --only flux.',
  },
  FLUX_SUBSTITUTION_FAILED: {
    title: 'A Flux variable substitution failed',
    meaning:
      'postBuild substitution met a variable that no source defines (strict mode: `variable not set`), or an applied object still holds `${VAR}` literally (substitution did not run for it). Flux would apply empty or literal values.',
    remedy:
      'Define the variable in the cluster-vars of this environment (or add postBuild.substituteFrom to the Kustomization that applies the object), push, and rerun with --only flux.',
  },
  FLUX_HEALTHCHECK_FAILED: {
    title: "A Flux Kustomization's health checks failed",
    meaning:
      "The Kustomization applied its objects, but the workloads it waits for (wait: true or healthChecks) did not become ready within its timeout (HealthCheckFailed), or its checks were still running when the bootstrap's wait (flux.waitSeconds) ended (HealthCheckRunning). The message names the objects not ready.",
    remedy: 'kubectl describe the objects the message names (pods, events); fix the workload or its values, push, and rerun with --only flux.',
  },
  FLUX_BUILD_FAILED: {
    title: 'A Flux Kustomization cannot be built',
    meaning: 'kustomize build of its path failed (a missing file, a patch that does not apply, invalid YAML); nothing of it was applied.',
    remedy: 'Run `kustomize build <path>` on the checkout, fix the error its message names, push, and rerun with --only flux.',
  },
  FLUX_RECONCILIATION_FAILED: {
    title: 'A Flux Kustomization did not become Ready',
    meaning:
      'It failed to apply (for a reason other than a missing CRD, a substitution or a build error), or was still not Ready when the budget ran out. Its Ready condition is in the evidence.',
    remedy:
      'kubectl -n flux-system describe kustomization <name>; flux events; fix what the message names and rerun with --only flux. When no Flux object became Ready at all, check the controllers run: kubectl -n flux-system get pods.',
  },
  FLUX_HELMRELEASE_NOT_READY: {
    title: "Flux's HelmRelease for Cilium did not become Ready",
    meaning:
      'The HelmRelease at cilium.helmRelease did not adopt (install or upgrade) the Cilium release within the budget, so the bootstrap keeps its HelmChart: nothing was handed over.',
    remedy:
      'kubectl -n <namespace> describe helmrelease <name>; its Helm release history: kubectl -n <namespace> get secrets -l owner=helm,name=<release>; fix and rerun with --only flux.',
  },
  HELMCHART_NOT_GONE: {
    title: "The bootstrap's Cilium HelmChart did not go at the hand-over",
    meaning:
      "After it was marked unmanaged and helm-controller's finalizer was taken off, the HelmChart was deleted but still exists when the wait ran out: a finalizer the bootstrap does not know holds it (the evidence lists them), or the API did not answer. Flux owns Cilium already; the release is untouched.",
    remedy:
      'kubectl -n kube-system get helmchart <name> -o yaml: remove what holds it (the finalizer named in the evidence, once its controller has no work left), and rerun with --only flux. Never remove the unmanaged annotation: helm-controller would uninstall Cilium.',
  },
  CILIUM_PARITY_DRIFT: {
    title: "Flux's Cilium values differ from the bootstrap's",
    meaning:
      "The live HelmRelease's spec.values differ from the values the bootstrap installed (its HelmChart) or would install from this checkout, or the cilium DaemonSet rolled across the hand-over: Flux and the bootstrap fight over the CNI. The differing keys are named as dotted paths.",
    remedy:
      'Make the HelmRelease in git and the checkout the bootstrap reads agree (pull the checkout, or revert the value), push, and rerun with --only flux. A deliberate change goes through git, after the hand-over.',
  },
});
