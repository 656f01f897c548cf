// A metav1.LabelSelector object (matchLabels plus matchExpressions) against an object's labels, as
// metav1.LabelSelectorAsSelector builds it (kubernetes/apimachinery pkg/apis/meta/v1/helpers.go): a null
// selector matches nothing, an empty one everything; an expression with an unknown operator makes the
// selector invalid, which the PodDisruptionBudget users treat as matching no pod.

export function labelSelectorMatches(selector: any, labels: Record<string, string> | undefined): boolean {
  if (selector === undefined || selector === null) return false;
  const l = labels ?? {};
  const has = (k: string) => Object.prototype.hasOwnProperty.call(l, k);
  for (const [k, v] of Object.entries(selector.matchLabels ?? {})) if (!has(k) || l[k] !== v) return false;
  for (const e of selector.matchExpressions ?? []) {
    const values: string[] = e.values ?? [];
    switch (e.operator) {
      case 'In':
        if (!has(e.key) || !values.includes(l[e.key])) return false;
        break;
      case 'NotIn':
        if (has(e.key) && values.includes(l[e.key])) return false;
        break;
      case 'Exists':
        if (!has(e.key)) return false;
        break;
      case 'DoesNotExist':
        if (has(e.key)) return false;
        break;
      default:
        return false;
    }
  }
  return true;
}
