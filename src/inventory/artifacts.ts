// ARTIFACT_MISSING: the local files an inventory names, checked when a run starts, before any
// connection, so a missing chart stops the run in a second instead of halfway through a build.
// `bootstrap validate` does not run this (it checks the file itself only).
import { CauseError } from '../errors.ts';
import type { Derived } from './types.ts';
import { entryKind, type EntryKind } from '../util/regular-file.ts';

/** The one filesystem question this check asks; injectable for tests. */
export interface ArtifactFs {
  kind(path: string): EntryKind;
}

const nodeArtifactFs: ArtifactFs = { kind: entryKind };

interface Expected {
  /** The inventory key that names it, for the message. */
  key: string;
  path: string;
  kind: 'file' | 'dir';
}

/** Every missing artifact, one CauseError each (an empty list when all are there). */
export function checkArtifacts(derived: Pick<Derived, 'paths'>, fs: ArtifactFs = nodeArtifactFs): CauseError[] {
  const p = derived.paths;
  const expected: Expected[] = [{ key: 'k3s.artifacts', path: p.k3sArtifacts, kind: 'dir' }];
  if (fs.kind(p.k3sArtifacts) === 'dir') expected.push({ key: 'k3s.artifacts (the k3s binary)', path: p.k3sBinary, kind: 'file' });
  const optional: [string, string | undefined, 'file' | 'dir'][] = [
    ['ssh.identityFile', p.sshIdentityFile, 'file'],
    ['gitops.checkout', p.gitopsCheckout, 'dir'],
    ['cilium.chart', p.ciliumChart, 'file'],
    ['cilium.helmRelease', p.ciliumHelmRelease, 'file'],
    ['flux.install', p.fluxInstall, 'file'],
    ['flux.deployKeyFile', p.fluxDeployKeyFile, 'file'],
    ['flux.knownHostsFile', p.fluxKnownHostsFile, 'file'],
  ];
  for (const [key, path, kind] of optional) if (path !== undefined) expected.push({ key, path, kind });
  (p.imageArchives ?? []).forEach((a, i) => expected.push({ key: `k3s.imageArchives[${i}]`, path: a.path, kind: 'file' }));
  // known_hosts may be absent (every host is then HOST_KEY_UNKNOWN, with the fingerprint to check), but
  // when something is there it must be a file: a FIFO would block the run before any connection.
  if (fs.kind(p.sshKnownHostsFile) !== 'missing') expected.push({ key: 'ssh.knownHostsFile', path: p.sshKnownHostsFile, kind: 'file' });

  const gitopsMissing = p.gitopsCheckout !== undefined && fs.kind(p.gitopsCheckout) !== 'dir';
  const errors: CauseError[] = [];
  for (const e of expected) {
    // NOTE: a missing checkout already explains a missing HelmRelease inside it; name the cause once.
    if (e.key === 'cilium.helmRelease' && gitopsMissing) continue;
    const found = fs.kind(e.path);
    if (found === e.kind) continue;
    const what = e.kind === 'dir' ? 'folder' : 'file';
    const seen =
      found === 'missing'
        ? `${e.path} does not exist`
        : found === 'other'
          ? `${e.path} is a FIFO, socket or device, not a ${what}`
          : `${e.path} is a ${found === 'dir' ? 'folder' : 'file'}, not a ${what}`;
    errors.push(
      new CauseError('ARTIFACT_MISSING', {
        message: `${e.key}: ${seen}`,
        evidence: { command: `test -${e.kind === 'dir' ? 'd' : 'f'} ${e.path}`, exitCode: 1, seen },
        retryable: false,
      }),
    );
  }
  return errors;
}
