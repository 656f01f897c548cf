// RBAC as kube-apiserver's authorizer decides it for a ServiceAccount, for the few requests the add-on
// twins make in-process (the twin's API stores RBAC objects but does not enforce them): ClusterRoleBindings
// and RoleBindings of the namespace naming the ServiceAccount, their roles' rules (apiGroups, resources,
// verbs, resourceNames; "*" matches all). The refusal text is the apiserver's Forbidden message.
import { BUILTIN } from '../api/resources.ts';
import type { KubeStore } from './context.ts';

const r = (x: string) => BUILTIN.find((i) => i.group === 'rbac.authorization.k8s.io' && i.resource === x)!;

export interface Request {
  verb: string;
  group: string;
  resource: string;
  namespace?: string;
  name?: string;
}

const has = (list: string[] | undefined, v: string) => (list ?? []).includes('*') || (list ?? []).includes(v);

function ruleAllows(rule: any, q: Request): boolean {
  return (
    has(rule.apiGroups, q.group) &&
    has(rule.resources, q.resource) &&
    has(rule.verbs, q.verb) &&
    (!rule.resourceNames?.length || (q.name !== undefined && rule.resourceNames.includes(q.name)))
  );
}

export async function allowed(store: KubeStore, sa: { namespace: string; name: string }, q: Request): Promise<boolean> {
  const bound = (b: any) =>
    (b.subjects ?? []).some((s: any) => s.kind === 'ServiceAccount' && s.name === sa.name && (s.namespace ?? b.metadata?.namespace) === sa.namespace);
  const roleRules = async (ref: any, ns?: string): Promise<any[]> => {
    const info = ref?.kind === 'Role' ? r('roles') : r('clusterroles');
    const role = await store.tryGet(info, ref?.kind === 'Role' ? ns : undefined, ref?.name);
    return role?.rules ?? [];
  };
  for (const b of (await store.list(r('clusterrolebindings'))).items.filter(bound)) {
    if ((await roleRules(b.roleRef)).some((rule) => ruleAllows(rule, q))) return true;
  }
  if (q.namespace) {
    for (const b of (await store.list(r('rolebindings'), q.namespace)).items.filter(bound)) {
      if ((await roleRules(b.roleRef, q.namespace)).some((rule) => ruleAllows(rule, q))) return true;
    }
  }
  return false;
}

/**
 * The apiserver's refusal: kubernetes/apiserver pkg/endpoints/handlers/responsewriters/errors.go
 * (forbiddenMessage: `in the namespace %q`, else `at the cluster scope`) inside kubernetes/apimachinery
 * pkg/api/errors/errors.go NewForbidden (`%s %q is forbidden: %v`, and `%s is forbidden: %v` when the request
 * names no object, as a create does: pkg/endpoints/request/requestinfo.go takes the name from the path).
 */
export function forbiddenMessage(sa: { namespace: string; name: string }, q: Request): string {
  const what = `${q.resource}${q.group ? `.${q.group}` : ''}${q.name ? ` "${q.name}"` : ''}`;
  const where = q.namespace ? `in the namespace "${q.namespace}"` : 'at the cluster scope';
  return `${what} is forbidden: User "system:serviceaccount:${sa.namespace}:${sa.name}" cannot ${q.verb} resource "${q.resource}" in API group "${q.group}" ${where}`;
}
