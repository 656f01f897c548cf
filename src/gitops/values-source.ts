// Cilium's values for the bootstrap install, taken from the GitOps HelmRelease that adopts Cilium later,
// with every ${VAR} substituted exactly as Flux will for this environment — so the bootstrap installs
// what Flux will reconcile (no parity by comments). Fails closed on anything unresolved.
import { readFile as fsReadFile } from 'node:fs/promises';
import { isAbsolute, join, relative, sep } from 'node:path';
import { parseAllDocuments } from 'yaml';
import { CauseError, CauseErrors, stopOf } from '../errors.ts';
import type { LoadedInventory } from '../inventory/load.ts';
import { substitutionVars, type SubstitutionVars } from './flux-vars.ts';
import { gitopsInvalid, type ReadFile } from './kustomize.ts';
import { substituteTree } from './substitute-tree.ts';

export interface CiliumValuesInput {
  /** The HelmRelease file, relative to the checkout (cilium.helmRelease), or absolute inside it. */
  helmReleasePath: string;
  /** gitops.path, relative to the checkout (clusters/prod). */
  clusterPath: string;
}

export interface CiliumValues {
  /** spec.values after substitution: what the HelmChart installs and Flux will reconcile. */
  values: Record<string, unknown>;
  /** spec.chart.spec.version (undefined when the HelmRelease uses chartRef or pins none). */
  chartVersion?: string;
  /** The Helm release name Flux uses: spec.releaseName, else [targetNamespace-]name. */
  releaseName: string;
  /** The HelmRelease object itself, as Flux applies it (the applying Kustomization's targetNamespace wins). */
  helmRelease: { name: string; namespace: string };
  /** Where the release's objects go: spec.targetNamespace, else the HelmRelease's namespace. */
  namespace: string;
  /** Where Flux looks for the release's storage: spec.storageNamespace, else the HelmRelease's namespace. */
  storageNamespace: string;
  vars: Record<string, string>;
  varOrigins: Record<string, string>;
  /** Every file of the checkout read, relative to it. */
  sourceFiles: string[];
}

const DISABLED = 'kustomize.toolkit.fluxcd.io/substitute';

/** Reads files of the checkout (the I/O side). */
export function checkoutReader(checkout: string): ReadFile {
  return (path) => fsReadFile(join(checkout, ...path.split('/')), 'utf8');
}

/** A path inside the checkout, '/'-separated; absolute paths (derived.paths.ciliumHelmRelease) are made relative. */
function checkoutRelative(checkout: string, path: string): string {
  return (isAbsolute(path) ? relative(checkout, path) : path).split(sep).join('/');
}

/** ciliumValues with the files of a checkout on this machine. */
export async function ciliumValues(input: CiliumValuesInput & { checkout: string; readFile?: ReadFile }): Promise<CiliumValues> {
  const read = input.readFile ?? checkoutReader(input.checkout);
  return ciliumValuesFrom(read, { helmReleasePath: checkoutRelative(input.checkout, input.helmReleasePath), clusterPath: input.clusterPath });
}

/** The logic, with reading injected. Throws CauseError / CauseErrors (GITOPS_SOURCE_INVALID, UNRESOLVED_SUBSTITUTION). */
async function ciliumValuesFrom(read: ReadFile, input: CiliumValuesInput): Promise<CiliumValues> {
  const file = input.helmReleasePath;
  let text: string;
  try {
    text = await read(file);
  } catch {
    throw gitopsInvalid(file, 'the HelmRelease file does not exist or cannot be read');
  }
  const hr = pickHelmRelease(text, file);
  const cv = await substitutionVars(read, { clusterPath: input.clusterPath, helmReleasePath: file });
  const disabled = hr.metadata?.annotations?.[DISABLED] === 'disabled' || hr.metadata?.labels?.[DISABLED] === 'disabled';
  // With substitution disabled Flux ships every ${VAR} literally: no variable is then defined.
  const { value, problems } = substituteTree(hr, disabled ? {} : cv.vars);
  if (problems.length) throw unresolved(problems, file, input.clusterPath, cv, disabled);
  const r = value as Record<string, any>;
  if (r.spec?.valuesFrom?.length)
    throw gitopsInvalid(file, 'spec.valuesFrom is not supported: bootstrap cannot see values kept in the cluster; inline them in spec.values');
  const name: string = r.metadata?.name;
  // The applying Kustomization's targetNamespace replaces the HelmRelease's own namespace.
  const hrNamespace: string | undefined = cv.appliedBy?.targetNamespace ?? r.metadata?.namespace;
  if (!name || !hrNamespace) throw gitopsInvalid(file, 'the HelmRelease needs metadata.name and metadata.namespace');
  const target: string | undefined = r.spec?.targetNamespace;
  const version = r.spec?.chart?.spec?.version;
  return {
    values: (r.spec?.values ?? {}) as Record<string, unknown>,
    chartVersion: version === undefined ? undefined : String(version),
    helmRelease: { name, namespace: hrNamespace },
    releaseName: r.spec?.releaseName ?? (target ? `${target}-${name}` : name),
    namespace: target ?? hrNamespace,
    storageNamespace: r.spec?.storageNamespace ?? hrNamespace,
    vars: cv.vars,
    varOrigins: cv.origins,
    sourceFiles: [file, ...cv.files],
  };
}

function pickHelmRelease(text: string, file: string): Record<string, any> {
  const docs = parseAllDocuments(text);
  const bad = docs.find((d) => d.errors.length);
  if (bad) throw gitopsInvalid(file, `not valid YAML: ${bad.errors[0].message}`);
  const releases = docs.map((d) => d.toJS()).filter((d) => d?.kind === 'HelmRelease');
  const cilium = releases.length === 1 ? releases : releases.filter((d) => d.spec?.chart?.spec?.chart === 'cilium');
  if (cilium.length !== 1) throw gitopsInvalid(file, `holds ${releases.length} HelmReleases and ${cilium.length} for the chart cilium (exactly one is needed)`);
  return cilium[0];
}

function unresolved(
  problems: ReturnType<typeof substituteTree>['problems'],
  file: string,
  clusterPath: string,
  cv: SubstitutionVars,
  disabled: boolean,
): CauseError | CauseErrors {
  const errors = problems.map(({ path, written, problem }) => {
    let where = problem.variable && cv.origins[problem.variable] ? ` (set by ${cv.origins[problem.variable]})` : '';
    if (problem.problem === 'undefined' && cv.secrets.length)
      where += ` (substituteFrom also names Secret ${cv.secrets.join(', ')}, which bootstrap cannot read: put the variable in a ConfigMap)`;
    const why = disabled
      ? `substitution is disabled on this HelmRelease (${DISABLED}: disabled), so Flux ships ${problem.expression} literally`
      : cv.none && problem.problem === 'undefined'
        ? cv.none
        : problem.message;
    return new CauseError('UNRESOLVED_SUBSTITUTION', {
      message: `${problem.variable || problem.expression} in ${file} (${path}) for ${clusterPath}: ${why}${where}`,
      evidence: {
        seen: `${why}${where}`,
        excerpt: `${file}: ${path}: ${JSON.stringify(written)}\nvariables ${cv.appliedBy ? `of Flux Kustomization ${cv.appliedBy.name} ` : ''}read from: ${cv.files.join(', ')}`,
      },
    });
  });
  return stopOf(errors);
}

/** ciliumValues for a loaded inventory (its gitops checkout and path, its cilium.helmRelease). */
export async function ciliumValuesFor(inv: LoadedInventory, readFile?: ReadFile): Promise<CiliumValues> {
  const { gitops, cilium } = inv.inventory;
  const checkout = inv.derived.paths.gitopsCheckout;
  if (!gitops || !cilium || !checkout)
    throw new Error('ciliumValuesFor: the inventory has no gitops/cilium section (contracts require both for the cilium phase)');
  return ciliumValues({ checkout, helmReleasePath: cilium.helmRelease, clusterPath: gitops.path, readFile });
}
