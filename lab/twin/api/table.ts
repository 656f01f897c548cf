// Server-side printing (meta.k8s.io/v1 Table), which kubectl asks for with `Accept: ...;as=Table`.
// Columns follow kube-apiserver's printers for the kinds an operator lists here; others get NAME and AGE.
function age(ts: string | undefined): string {
  if (!ts) return '<unknown>';
  const s = Math.max(0, Math.floor((Date.now() - Date.parse(ts)) / 1000));
  if (s < 120) return `${s}s`;
  if (s < 7200) return `${Math.floor(s / 60)}m`;
  if (s < 172800) return `${Math.floor(s / 3600)}h`;
  return `${Math.floor(s / 86400)}d`;
}

const col = (name: string, type = 'string', priority = 0) => ({ name, type, format: name === 'Name' ? 'name' : '', description: name, priority });

function nodeRow(o: any): unknown[] {
  const ready = (o.status?.conditions ?? []).find((c: any) => c.type === 'Ready');
  let status = ready?.status === 'True' ? 'Ready' : ready ? 'NotReady' : 'Unknown';
  if (o.spec?.unschedulable) status += ',SchedulingDisabled';
  const roles = Object.keys(o.metadata?.labels ?? {})
    .filter((k) => k.startsWith('node-role.kubernetes.io/'))
    .map((k) => k.slice('node-role.kubernetes.io/'.length))
    .sort();
  return [o.metadata.name, status, roles.length ? roles.join(',') : '<none>', age(o.metadata.creationTimestamp), o.status?.nodeInfo?.kubeletVersion ?? ''];
}

export function toTable(kind: string, items: any[], resourceVersion: string, includeObject: string): any {
  let columns = [col('Name'), col('Age')];
  let row = (o: any): unknown[] => [o.metadata.name, age(o.metadata.creationTimestamp)];
  if (kind === 'Node') {
    columns = [col('Name'), col('Status'), col('Roles'), col('Age'), col('Version')];
    row = nodeRow;
  } else if (kind === 'ConfigMap') {
    columns = [col('Name'), col('Data', 'integer'), col('Age')];
    row = (o) => [o.metadata.name, Object.keys(o.data ?? {}).length + Object.keys(o.binaryData ?? {}).length, age(o.metadata.creationTimestamp)];
  } else if (kind === 'Namespace') {
    columns = [col('Name'), col('Status'), col('Age')];
    row = (o) => [o.metadata.name, o.status?.phase ?? 'Active', age(o.metadata.creationTimestamp)];
  }
  return {
    kind: 'Table',
    apiVersion: 'meta.k8s.io/v1',
    metadata: { resourceVersion },
    columnDefinitions: columns,
    rows: items.map((o) => ({
      cells: row(o),
      object: includeObject === 'None' ? undefined : includeObject === 'Object' ? o
        : { kind: 'PartialObjectMetadata', apiVersion: 'meta.k8s.io/v1', metadata: o.metadata },
    })),
  };
}
