// The variables Flux substitutes for an environment: the data of the `cluster-vars` ConfigMap as
// `kustomize build <gitops.path>` produces it (the base ConfigMap plus the overlay's patches).
import { gitopsInvalid, kustomizeBuild, type ReadFile, type Resource } from './kustomize.ts';

export interface ClusterVars {
  vars: Record<string, string>;
  /** For each variable, the file that set its effective value (base ConfigMap or a patch). */
  origins: Record<string, string>;
  /** Every file read to compute them. */
  files: string[];
}

export interface ClusterVarsOptions {
  /** gitops.path, relative to the checkout (clusters/prod). */
  clusterPath: string;
  name?: string;
  namespace?: string;
}

/** Flux's rule for names of substitution variables (kustomize-controller refuses any other). */
const VAR_NAME = /^[_a-zA-Z][_a-zA-Z0-9]*$/;

export async function effectiveClusterVars(read: ReadFile, opts: ClusterVarsOptions): Promise<ClusterVars> {
  const name = opts.name ?? 'cluster-vars';
  const namespace = opts.namespace ?? 'flux-system';
  const built = await kustomizeBuild(read, opts.clusterPath);
  const cm = findConfigMap(built.resources, name, namespace);
  if (!cm) {
    throw gitopsInvalid(
      opts.clusterPath,
      `kustomize build yields no ConfigMap ${namespace}/${name} (it holds the substitution variables)`,
      `files read: ${built.files.join(', ')}`,
    );
  }
  return { ...configMapVars(cm), files: built.files };
}

/** The one ConfigMap of that name and namespace in a build (a second one is refused by the build itself). */
export function findConfigMap(resources: Resource[], name: string, namespace: string): Resource | undefined {
  return resources.find((r) => r.doc.kind === 'ConfigMap' && r.doc.metadata?.name === name && (r.doc.metadata?.namespace ?? 'default') === namespace);
}

export function configMapVars(cm: Resource): { vars: Record<string, string>; origins: Record<string, string> } {
  const vars: Record<string, string> = {};
  for (const [k, v] of Object.entries(cm.doc.data ?? {})) {
    if (!VAR_NAME.test(k)) throw gitopsInvalid(cm.origins[k] ?? cm.file, `'${k}' is not a valid variable name for Flux (it must match ${VAR_NAME.source})`);
    // NOTE: ConfigMap data are strings; an unquoted YAML number or boolean is read as its text.
    vars[k] = v === null || v === undefined ? '' : String(v);
  }
  return { vars, origins: { ...cm.origins } };
}

export function checkVarName(name: string, file: string): void {
  if (!VAR_NAME.test(name)) throw gitopsInvalid(file, `'${name}' is not a valid variable name for Flux (it must match ${VAR_NAME.source})`);
}
