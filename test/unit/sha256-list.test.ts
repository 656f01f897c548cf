// sha256sum's list format as a release publishes it and as sha256sum prints it for files on a host: the
// hex of the line whose name is exactly the one asked for.
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { expect, it } from 'vitest';
import { sha256FromList } from '../../src/artifacts/sha256-list.ts';

const A = 'a'.repeat(64);
const B = 'B'.repeat(64);

it("reads a release's list: text and binary mode, a ./ prefix, upper-case hex; a name must match whole", () => {
  const list = `${A}  k3s\n${B} *k3s-airgap-images-amd64.tar.zst\n${'c'.repeat(64)}  ./k3s-arm64\n`;
  expect(sha256FromList(list, 'k3s')).toBe(A);
  expect(sha256FromList(list, 'k3s-airgap-images-amd64.tar.zst')).toBe(B.toLowerCase());
  expect(sha256FromList(list, 'k3s-arm64')).toBe('c'.repeat(64));
  expect(sha256FromList(list, 'k3s-airgap')).toBeUndefined();
});

it('reads what sha256sum printed for files on a host, a name with a space included, a missing file absent', () => {
  const dir = mkdtempSync(join(tmpdir(), 'sha256-list-'));
  try {
    writeFileSync(join(dir, 'flux images.tar'), 'flux');
    writeFileSync(join(dir, 'cilium.tar'), 'cilium');
    const files = ['flux images.tar', 'cilium.tar', 'gone.tar'].map((f) => join(dir, f));
    const r = spawnSync('sha256sum', files, { encoding: 'utf8' });
    expect(r.status).toBe(1);
    const one = (f: string) => spawnSync('sha256sum', [f], { encoding: 'utf8' }).stdout.split(' ')[0];
    expect(sha256FromList(r.stdout, files[0])).toBe(one(files[0]));
    expect(sha256FromList(r.stdout, files[1])).toBe(one(files[1]));
    expect(sha256FromList(r.stdout, files[2])).toBeUndefined();
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
