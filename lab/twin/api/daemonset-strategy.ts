// What kube-apiserver's DaemonSet strategy does to a DaemonSet on create and update (kubernetes/kubernetes @152b09ac
// pkg/registry/apps/daemonset/strategy.go, PrepareForCreate / PrepareForUpdate): metadata.generation
// goes up on ANY spec change, the template generation only when spec.template changes. apps/v1 has no
// spec.templateGeneration field: it is served as the annotation `deprecated.daemonset.template.generation`
// (kubernetes/api v0.33.5 apps/v1/types.go DeprecatedTemplateGeneration; kubernetes/kubernetes
// pkg/apis/apps/v1/conversion.go), so a
// client cannot set or drop it on update. The DaemonSet controller labels its pods with it
// (`pod-template-generation`). Pure.
export const TEMPLATE_GENERATION = 'deprecated.daemonset.template.generation';

/** Objects compared as apiequality.Semantic.DeepEqual does: key order does not matter. */
export function canonical(v: unknown): string {
  return JSON.stringify(sortKeys(v));
}

function sortKeys(v: unknown): unknown {
  if (Array.isArray(v)) return v.map(sortKeys);
  if (v === null || typeof v !== 'object') return v;
  return Object.fromEntries(
    Object.keys(v)
      .sort()
      .map((k) => [k, sortKeys((v as Record<string, unknown>)[k])]),
  );
}

export function templateGeneration(ds: any): number | undefined {
  const n = Number(ds?.metadata?.annotations?.[TEMPLATE_GENERATION]);
  return Number.isInteger(n) && n >= 1 ? n : undefined;
}

/** PrepareForCreate: a template generation below 1 (or none) becomes 1. */
export function prepareDaemonSetCreate(ds: any): void {
  const meta = (ds.metadata ??= {});
  meta.annotations = { ...(meta.annotations ?? {}), [TEMPLATE_GENERATION]: String(templateGeneration(ds) ?? 1) };
}

/** PrepareForUpdate: the old template generation, one more when spec.template changed. */
export function prepareDaemonSetUpdate(next: any, old: any): void {
  const before = templateGeneration(old) ?? 1;
  const changed = canonical(next?.spec?.template ?? null) !== canonical(old?.spec?.template ?? null);
  const meta = (next.metadata ??= {});
  meta.annotations = { ...(meta.annotations ?? {}), [TEMPLATE_GENERATION]: String(changed ? before + 1 : before) };
}
