// Server-side printing (meta.k8s.io/v1 Table), which kubectl asks for with `Accept: ...;as=Table`.
// Columns follow kube-apiserver's printers (kubernetes pkg/printers/internalversion/printers.go) for the
// kinds an operator lists here; others get NAME and AGE. Columns of priority 1 are what `-o wide` adds.
function age(ts: string | undefined): string {
  if (!ts) return '<unknown>';
  const s = Math.max(0, Math.floor((Date.now() - Date.parse(ts)) / 1000));
  if (s < 120) return `${s}s`;
  if (s < 7200) return `${Math.floor(s / 60)}m`;
  if (s < 172800) return `${Math.floor(s / 3600)}h`;
  return `${Math.floor(s / 86400)}d`;
}

const col = (name: string, type = 'string', priority = 0) => ({ name, type, format: name === 'Name' ? 'name' : '', description: name, priority });

const POD_COLUMNS = [
  col('Name'),
  col('Ready'),
  col('Status'),
  col('Restarts'),
  col('Age'),
  col('IP', 'string', 1),
  col('Node', 'string', 1),
  col('Nominated Node', 'string', 1),
  col('Readiness Gates', 'string', 1),
];

/**
 * printers.go printPod: READY n/m, STATUS the phase or a container's reason (an init container's first, as
 * Init:<reason> or Init:i/n while the pod initializes), RESTARTS with the last restart's age. No sidecar
 * (restartable) init containers.
 */
export function podRow(o: any): unknown[] {
  const st = o.status ?? {};
  const containers = o.spec?.containers ?? [];
  let reason: string = st.reason || st.phase || '';
  let restarts = 0;
  let ready = 0;
  let lastRestart: number | undefined;
  let hasRunning = false;
  const noteRestart = (c: any) => {
    const finished = c.lastState?.terminated?.finishedAt;
    if (finished && (lastRestart === undefined || Date.parse(finished) > lastRestart)) lastRestart = Date.parse(finished);
  };
  let initializing = false;
  const inits: any[] = st.initContainerStatuses ?? [];
  for (const [i, c] of inits.entries()) {
    restarts += c.restartCount ?? 0;
    noteRestart(c);
    const t = c.state?.terminated;
    if (t && t.exitCode === 0) continue;
    if (t) reason = t.reason ? `Init:${t.reason}` : t.signal ? `Init:Signal:${t.signal}` : `Init:ExitCode:${t.exitCode}`;
    else if (c.state?.waiting?.reason && c.state.waiting.reason !== 'PodInitializing') reason = `Init:${c.state.waiting.reason}`;
    else reason = `Init:${i}/${(o.spec?.initContainers ?? []).length}`;
    initializing = true;
    break;
  }
  const initialized = (st.conditions ?? []).some((c: any) => c.type === 'Initialized' && c.status === 'True');
  if (!initializing || initialized) {
    restarts = 0;
    lastRestart = undefined;
    for (const c of [...(st.containerStatuses ?? [])].reverse()) {
      restarts += c.restartCount ?? 0;
      noteRestart(c);
      if (c.state?.waiting?.reason) reason = c.state.waiting.reason;
      else if (c.state?.terminated?.reason) reason = c.state.terminated.reason;
      else if (c.state?.terminated) reason = c.state.terminated.signal ? `Signal:${c.state.terminated.signal}` : `ExitCode:${c.state.terminated.exitCode}`;
      else if (c.ready && c.state?.running) {
        hasRunning = true;
        ready++;
      }
    }
  }
  if (reason === 'Completed' && hasRunning) {
    const podReady = (st.conditions ?? []).some((c: any) => c.type === 'Ready' && c.status === 'True');
    reason = podReady ? 'Running' : 'NotReady';
  }
  if (o.metadata?.deletionTimestamp) reason = st.reason === 'NodeLost' ? 'Unknown' : 'Terminating';
  const restartsCell = restarts !== 0 && lastRestart !== undefined ? `${restarts} (${age(new Date(lastRestart).toISOString())} ago)` : String(restarts);
  const gates = o.spec?.readinessGates ?? [];
  const gatesCell = gates.length
    ? `${gates.filter((g: any) => (st.conditions ?? []).some((c: any) => c.type === g.conditionType && c.status === 'True')).length}/${gates.length}`
    : '<none>';
  return [
    o.metadata.name,
    `${ready}/${containers.length}`,
    reason,
    restartsCell,
    age(o.metadata.creationTimestamp),
    st.podIP || '<none>',
    o.spec?.nodeName || '<none>',
    st.nominatedNodeName || '<none>',
    gatesCell,
  ];
}

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
  } else if (kind === 'Pod') {
    columns = POD_COLUMNS;
    row = podRow;
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
      object:
        includeObject === 'None'
          ? undefined
          : includeObject === 'Object'
            ? o
            : { kind: 'PartialObjectMetadata', apiVersion: 'meta.k8s.io/v1', metadata: o.metadata },
    })),
  };
}
