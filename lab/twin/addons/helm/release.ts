// A Helm 3 release record as Helm's Secret storage driver keeps it (pkg/storage/driver/secrets.go):
// Secret sh.helm.release.v1.<name>.v<version>, type helm.sh/release.v1, labels name/owner=helm/status/
// version, data.release = base64(gzip(JSON of the release)) — so a later `helm`, or Flux's helm-controller
// adopting the release, reads the values (config) it was installed with.
import { gunzipSync, gzipSync } from 'node:zlib';

export interface ReleaseInput {
  name: string;
  namespace: string;
  version: number;
  status: 'deployed' | 'superseded' | 'failed';
  chartMetadata: any;
  chartValues: any;
  config: any;
  manifest: string;
  firstDeployed: string;
  description: string;
}

const releaseSecretName = (name: string, version: number) => `sh.helm.release.v1.${name}.v${version}`;

function encodeRelease(r: ReleaseInput, now = new Date().toISOString()): string {
  const rel = {
    name: r.name,
    info: { first_deployed: r.firstDeployed, last_deployed: now, deleted: '', description: r.description, status: r.status },
    chart: { metadata: r.chartMetadata, lock: null, templates: [], values: r.chartValues, schema: null, files: [] },
    config: r.config,
    manifest: r.manifest,
    version: r.version,
    namespace: r.namespace,
  };
  return gzipSync(Buffer.from(JSON.stringify(rel))).toString('base64');
}

/** The release JSON back out of a Secret's data.release (as `helm get values` does). */
export function decodeRelease(secretDataRelease: string): any {
  const inner = Buffer.from(secretDataRelease, 'base64').toString('utf8');
  return JSON.parse(gunzipSync(Buffer.from(inner, 'base64')).toString('utf8'));
}

export function releaseSecret(r: ReleaseInput): any {
  return {
    apiVersion: 'v1',
    kind: 'Secret',
    type: 'helm.sh/release.v1',
    metadata: {
      name: releaseSecretName(r.name, r.version),
      namespace: r.namespace,
      labels: { name: r.name, owner: 'helm', status: r.status, version: String(r.version), modifiedAt: String(Math.floor(Date.now() / 1000)) },
    },
    data: { release: Buffer.from(encodeRelease(r)).toString('base64') },
  };
}
