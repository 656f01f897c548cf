// An inventory of the lab at another twin release: k3s.version set, k3s.artifacts pointing at that release's
// folder (lab/twin/releases.ts). What a test or the bench writes to roll the lab's cluster to another release.
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DEFAULT_TWIN_RELEASE, twinReleaseArtifacts } from './api.ts';

export function inventoryAtRelease(base: string, version: string): string {
  const file = join(mkdtempSync(join(tmpdir(), 'lab-release-')), 'lab.yaml');
  let text = readFileSync(base, 'utf8').replace(/version: v\d+\.\d+\.\d+\+k3s\d+/, `version: ${version}`);
  if (version !== DEFAULT_TWIN_RELEASE.version) text = text.replace(/artifacts: .*/, `artifacts: ${twinReleaseArtifacts(version)}`);
  writeFileSync(file, text);
  return file;
}
