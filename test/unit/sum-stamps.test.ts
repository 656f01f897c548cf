// An upload's stamp and the sums probe that reads it, through a real local sh and GNU coreutils as on a host:
// the probe answers from the stamp while the file is unchanged (sha256sum is not run: a shim in PATH
// counts its starts), hashes a file that was written or replaced since, even with its old content or its old
// modification time, and prints nothing for a missing file. An upload whose copy is not what was sent stops
// before it takes the file's place.
import { spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { chmodSync, existsSync, mkdirSync, mkdtempSync, readFileSync, readdirSync, rmSync, utimesSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { checkedUpload, sumsProbe } from '../../src/engine/sum-stamps.ts';
import { shq } from '../../src/util/shell.ts';

const root = mkdtempSync(join(tmpdir(), 'sum-stamps-'));
const stamps = join(root, 'stamps');
const files = join(root, 'host files');
const shims = join(root, 'bin');
const hashed = join(root, 'hashed');
mkdirSync(files);
mkdirSync(shims);
// sha256sum as the host has it, each start written down.
writeFileSync(join(shims, 'sha256sum'), `#!/bin/sh\necho "$*" >> ${shq(hashed)}\nexec /usr/bin/sha256sum "$@"\n`);
chmodSync(join(shims, 'sha256sum'), 0o755);
afterAll(() => rmSync(root, { recursive: true, force: true }));

const sha = (text: string) => createHash('sha256').update(text).digest('hex');

function sh(script: string, input = '') {
  rmSync(hashed, { force: true });
  const r = spawnSync('sh', ['-c', script], { input, encoding: 'utf8', env: { ...process.env, PATH: `${shims}:${process.env.PATH}` } });
  const starts = existsSync(hashed) ? readFileSync(hashed, 'utf8').trim().split('\n') : [];
  return { code: r.status, stdout: r.stdout, stderr: r.stderr, starts };
}

/** The upload as the engine composes it (src/engine/apply.ts): the copy, its check, the rename, the stamp. */
function upload(path: string, content: string, sent = sha(content)) {
  const tmp = `${path}.bootstrap-tmp`;
  const c = checkedUpload(tmp, path, sent, stamps);
  return sh(['umask 077', `cat > ${shq(tmp)}`, c.check, `chmod 0644 ${shq(tmp)}`, `mv -f ${shq(tmp)} ${shq(path)}`, c.stamp].join(' && '), content);
}

describe('upload stamps', () => {
  const binary = join(files, 'k3s');
  const archive = join(files, 'cilium images.tar');
  const missing = join(files, 'flux.tar');
  const probe = () => sh(sumsProbe([binary, archive, missing], stamps));

  it('answers from the stamps of uploaded files without hashing them; a file placed otherwise is hashed', () => {
    expect(upload(binary, 'k3s v1').code).toBe(0);
    writeFileSync(archive, 'placed by hand');
    const r = probe();
    expect(r.code).toBe(0);
    expect(r.stdout).toBe(`${sha('k3s v1')}  ${binary}\n${sha('placed by hand')}  ${archive}\n`);
    expect(r.starts).toEqual([`-- ${archive}`]);
    expect(readdirSync(stamps)).toEqual([encodeURIComponent(binary)]);
  });

  it('hashes a file written since its stamp, even with the same content or its old modification time', () => {
    expect(upload(archive, 'cilium 1.19').code).toBe(0);
    expect(probe().starts).toEqual([]);
    const before = spawnSync('stat', ['-c', '%Y', archive], { encoding: 'utf8' }).stdout.trim();
    writeFileSync(archive, 'cilium 1.20');
    utimesSync(archive, Number(before), Number(before));
    const r = probe();
    expect(r.stdout).toContain(`${sha('cilium 1.20')}  ${archive}\n`);
    expect(r.starts).toEqual([`-- ${archive}`]);
    // The same bytes written again: its ctime moved, so it is hashed, not trusted.
    expect(upload(archive, 'cilium 1.19').code).toBe(0);
    writeFileSync(archive, 'cilium 1.19');
    expect(probe().starts).toEqual([`-- ${archive}`]);
  });

  it('hashes a file put in the place of an uploaded one', () => {
    expect(upload(binary, 'k3s v1').code).toBe(0);
    expect(upload(archive, 'cilium 1.19').code).toBe(0);
    writeFileSync(`${binary}.new`, 'k3s v2');
    expect(sh(`mv -f ${shq(`${binary}.new`)} ${shq(binary)}`).code).toBe(0);
    const r = probe();
    // The stamped files' lines come first, then sha256sum's (readers look a file up by its name).
    expect(r.stdout).toBe(`${sha('cilium 1.19')}  ${archive}\n${sha('k3s v2')}  ${binary}\n`);
    expect(r.starts).toEqual([`-- ${binary}`]);
  });

  it('prints nothing for files that are not there, and exits 0', () => {
    const r = sh(sumsProbe([missing], stamps));
    expect(r).toMatchObject({ code: 0, stdout: '', starts: [] });
  });

  it('stops an upload whose copy is not what was sent, before it takes the file’s place', () => {
    expect(upload(binary, 'k3s v1').code).toBe(0);
    const r = upload(binary, 'k3s v1 truncat', sha('k3s v1 truncated'));
    expect(r.code).toBe(9);
    expect(r.stderr).toBe(`the uploaded copy's sha256 is ${sha('k3s v1 truncat')}, not the ${sha('k3s v1 truncated')} that was sent\n`);
    expect(readFileSync(binary, 'utf8')).toBe('k3s v1');
    expect(existsSync(`${binary}.bootstrap-tmp`)).toBe(false);
    expect(probe().stdout.split('\n')[0]).toBe(`${sha('k3s v1')}  ${binary}`);
  });
});
