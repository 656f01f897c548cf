import { describe, expect, it } from 'vitest';
import { manifestDocs } from '../../lab/twin/server/manifests.ts';
import { apiGroupList, openapiV2Protobuf } from '../../lab/twin/api/discovery.ts';
import { BUILTIN, fromCRD } from '../../lab/twin/api/resources.ts';

describe('k3s twin manifests and discovery', () => {
  it('reads every document of a manifest file, unrolls Lists and skips empty documents', () => {
    const docs = manifestDocs(
      '---\n# comment only\n---\napiVersion: v1\nkind: Namespace\nmetadata: {name: a}\n---\napiVersion: v1\nkind: List\nitems:\n- {apiVersion: v1, kind: ConfigMap, metadata: {name: b}}\n- {apiVersion: v1, kind: Secret, metadata: {name: c}}\n',
    );
    expect(docs.map((d) => `${d.kind}/${d.metadata.name}`)).toEqual(['Namespace/a', 'ConfigMap/b', 'Secret/c']);
  });

  it('serves a stored CRD as a resource of its group in discovery', () => {
    const crd = {
      spec: {
        group: 'helm.cattle.io',
        scope: 'Namespaced',
        names: { kind: 'HelmChart', plural: 'helmcharts' },
        versions: [{ name: 'v1', served: true, subresources: { status: {} } }],
      },
    };
    const infos = fromCRD(crd);
    expect(infos).toMatchObject([{ group: 'helm.cattle.io', version: 'v1', resource: 'helmcharts', kind: 'HelmChart', namespaced: true, status: true }]);
    const groups = apiGroupList([...BUILTIN, ...infos]).groups.map((g) => g.name);
    expect(groups).toContain('helm.cattle.io');
    expect(groups).toContain('apps');
    expect(groups).not.toContain('');
  });

  it('encodes the OpenAPI v2 stub as the protobuf kubectl expects (swagger "2.0", info)', () => {
    const pb = openapiV2Protobuf();
    expect(pb.subarray(0, 5)).toEqual(Buffer.from([0x0a, 0x03, 0x32, 0x2e, 0x30]));
    expect(pb[5]).toBe(0x12);
  });
});
