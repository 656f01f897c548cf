// Discovery documents (/api, /api/v1, /apis, /apis/<group>/<version>) in the legacy JSON form that every
// kubectl and client-go understands; clients asking for aggregated discovery fall back to it.
import { type ResourceInfo } from './resources.ts';

const VERBS = ['create', 'delete', 'deletecollection', 'get', 'list', 'patch', 'update', 'watch'];

export function apiVersions(serverAddress: string) {
  return { kind: 'APIVersions', versions: ['v1'], serverAddressByClientCIDRs: [{ clientCIDR: '0.0.0.0/0', serverAddress }] };
}

export function resourceList(groupVersion: string, infos: ResourceInfo[]) {
  const resources: any[] = [];
  for (const i of infos) {
    resources.push({
      name: i.resource,
      singularName: i.singular,
      namespaced: i.namespaced,
      kind: i.kind,
      verbs: VERBS,
      ...(i.shortNames?.length ? { shortNames: i.shortNames } : {}),
    });
    if (i.status) resources.push({ name: `${i.resource}/status`, singularName: '', namespaced: i.namespaced, kind: i.kind, verbs: ['get', 'patch', 'update'] });
    // kubectl drain looks for pods/eviction (group policy, kind Eviction) before it evicts instead of deleting.
    if (i.group === '' && i.resource === 'pods')
      resources.push({ name: 'pods/eviction', singularName: '', namespaced: true, group: 'policy', version: 'v1', kind: 'Eviction', verbs: ['create'] });
  }
  return { kind: 'APIResourceList', apiVersion: 'v1', groupVersion, resources };
}

function groupEntry(name: string, versions: string[]) {
  const vs = versions.map((v) => ({ groupVersion: `${name}/${v}`, version: v }));
  return { name, versions: vs, preferredVersion: vs[0] };
}

function groups(all: ResourceInfo[]) {
  const byGroup = new Map<string, string[]>();
  for (const i of all) {
    if (!i.group) continue;
    const vs = byGroup.get(i.group) ?? [];
    if (!vs.includes(i.version)) vs.push(i.version);
    byGroup.set(i.group, vs);
  }
  return [...byGroup].map(([name, vs]) => groupEntry(name, vs));
}

export function apiGroupList(all: ResourceInfo[]) {
  return { kind: 'APIGroupList', apiVersion: 'v1', groups: groups(all) };
}

export function apiGroup(all: ResourceInfo[], name: string) {
  const g = groups(all).find((x) => x.name === name);
  return g ? { kind: 'APIGroup', apiVersion: 'v1', ...g } : undefined;
}

/**
 * A minimal OpenAPI v2 document. kubectl asks for it as protobuf (openapi_v2.Document); field 1 is the
 * swagger version, field 2 the info message (title = field 1, version = field 2). No definitions: kubectl
 * then skips client-side schema validation for every kind.
 */
export function openapiV2Protobuf(): Buffer {
  const str = (field: number, s: string) => Buffer.concat([Buffer.from([(field << 3) | 2, Buffer.byteLength(s)]), Buffer.from(s)]);
  const info = Buffer.concat([str(1, 'Kubernetes'), str(2, 'v1')]);
  return Buffer.concat([str(1, '2.0'), Buffer.from([(2 << 3) | 2, info.length]), info]);
}

export function openapiV2Json() {
  return { swagger: '2.0', info: { title: 'Kubernetes', version: 'v1' }, paths: {}, definitions: {} };
}
