// The variables Flux substitutes in the Cilium HelmRelease: those of the Flux Kustomization that applies
// it (the one in the environment's build whose spec.path holds the HelmRelease file) — its
// postBuild.substituteFrom ConfigMaps in order, later ones overriding, then its inline postBuild.substitute
// overriding those (kustomize-controller's order). Without such a Kustomization, the environment's
// cluster-vars ConfigMap is taken (the layout the operator's clusters/ README describes).
import { posix } from 'node:path';
import { configMapVars, checkVarName, findConfigMap } from './cluster-vars.ts';
import { gitopsInvalid, kustomizeBuild, type ReadFile, type Resource } from './kustomize.ts';

export interface SubstitutionVars {
  vars: Record<string, string>;
  /** For each variable, where its value was set (a ConfigMap file or patch, or the Kustomization). */
  origins: Record<string, string>;
  files: string[];
  /** The Flux Kustomization that applies the HelmRelease, when the build has one. */
  appliedBy?: { name: string; namespace: string; file: string; targetNamespace?: string };
  /** Secrets named in substituteFrom: bootstrap cannot read them (their variables count as undefined). */
  secrets: string[];
  /** Why no variable at all is defined, when that is so (Flux then substitutes nothing). */
  none?: string;
}

const isFluxKustomization = (r: Resource) => r.doc.kind === 'Kustomization' && String(r.doc.apiVersion ?? '').startsWith('kustomize.toolkit.fluxcd.io/');

/** The Flux Kustomization whose path holds `file` (the most specific one). */
function fluxKustomizationFor(resources: Resource[], file: string): Resource | undefined {
  const covering = resources.filter(isFluxKustomization).filter((r) => {
    const dir = posix.normalize(String(r.doc.spec?.path ?? '.')).replace(/^\.\/?|\/$/g, '');
    return dir === '' || file.startsWith(`${dir}/`);
  });
  return covering.sort((a, b) => String(b.doc.spec?.path).length - String(a.doc.spec?.path).length)[0];
}

export async function substitutionVars(read: ReadFile, opts: { clusterPath: string; helmReleasePath: string }): Promise<SubstitutionVars> {
  const built = await kustomizeBuild(read, opts.clusterPath);
  const ks = fluxKustomizationFor(built.resources, opts.helmReleasePath);
  if (!ks) {
    const cm = findConfigMap(built.resources, 'cluster-vars', 'flux-system');
    if (!cm)
      throw gitopsInvalid(
        opts.clusterPath,
        `no Flux Kustomization of this build applies ${opts.helmReleasePath}, and it has no ConfigMap flux-system/cluster-vars`,
      );
    return { ...configMapVars(cm), files: built.files, secrets: [] };
  }
  const name = String(ks.doc.metadata?.name);
  const namespace = String(ks.doc.metadata?.namespace ?? 'default');
  const appliedBy = { name, namespace, file: ks.file, targetNamespace: ks.doc.spec?.targetNamespace as string | undefined };
  const postBuild = ks.doc.spec?.postBuild ?? {};
  const vars: Record<string, string> = {};
  const origins: Record<string, string> = {};
  const secrets: string[] = [];
  for (const ref of postBuild.substituteFrom ?? []) {
    if (ref?.kind === 'Secret') {
      secrets.push(String(ref.name));
      continue;
    }
    const cm = findConfigMap(built.resources, String(ref?.name), namespace);
    if (!cm) {
      if (ref?.optional === true) continue;
      throw gitopsInvalid(ks.file, `Kustomization ${name} substitutes from ConfigMap ${namespace}/${ref?.name}, which this build does not hold`);
    }
    const got = configMapVars(cm);
    Object.assign(vars, got.vars);
    Object.assign(origins, got.origins);
  }
  for (const [k, v] of Object.entries(postBuild.substitute ?? {})) {
    checkVarName(k, ks.file);
    vars[k] = String(v ?? '');
    origins[k] = `${ks.file} (Kustomization ${name}, postBuild.substitute)`;
  }
  const none = Object.keys(vars).length
    ? undefined
    : `the Flux Kustomization ${name} (${ks.file}) that applies ${opts.helmReleasePath} defines no variable, so Flux substitutes nothing and ships every \${VAR} literally`;
  return { vars, origins, files: built.files, appliedBy, secrets, none };
}
