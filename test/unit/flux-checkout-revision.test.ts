// The revision source-controller reports when Flux's GitRepository serves the operator's checkout: read
// from the checkout's own repository, and only when it can tell (else the Flux wait fetches as before).
import { execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, realpathSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { readCheckoutRevision, revisionOf } from '../../phases/flux/checkout-revision.ts';

const A = 'a'.repeat(40);
const B = 'b'.repeat(40);

describe('revisionOf (git rev-parse --show-toplevel refs/heads/<branch>^{commit} HEAD^{commit} --)', () => {
  it("is source-controller's `<branch>@sha1:<commit>` when HEAD is the branch's commit at the checkout's top level", () => {
    expect(revisionOf('/c', 'main', { code: 0, stdout: `/c\n${A}\n${A}\n--\n` })).toBe(`main@sha1:${A}`);
    expect(revisionOf('/c', 'team/prod', { code: 0, stdout: `/c\n${A}\n${A}\n--\n` })).toBe(`team/prod@sha1:${A}`);
  });

  it.each([
    ['git failed (no branch, not a repository, no git)', { code: 128, stdout: '' }],
    ['HEAD is another commit (another branch checked out)', { code: 0, stdout: `/c\n${A}\n${B}\n--\n` }],
    ['the checkout is a folder inside another repository', { code: 0, stdout: `/\n${A}\n${A}\n--\n` }],
    ['a SHA-256 repository (source-controller writes no sha1 digest for it)', { code: 0, stdout: `/c\n${'a'.repeat(64)}\n${'a'.repeat(64)}\n--\n` }],
    ['output of another shape', { code: 0, stdout: `/c\n${A}\n` }],
  ])('says nothing when %s', (_what, res) => {
    expect(revisionOf('/c', 'main', res)).toBeUndefined();
  });
});

describe('readCheckoutRevision', () => {
  const dir = realpathSync(mkdtempSync(join(tmpdir(), 'checkout-revision-')));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));
  const env = {
    ...process.env,
    GIT_CONFIG_NOSYSTEM: '1',
    HOME: dir,
    GIT_AUTHOR_NAME: 't',
    GIT_AUTHOR_EMAIL: 't@x',
    GIT_COMMITTER_NAME: 't',
    GIT_COMMITTER_EMAIL: 't@x',
  };
  const git = (cwd: string, ...args: string[]) => execFileSync('git', args, { cwd, env, encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] }).trim();

  it("reads the checkout's commit of the branch; another branch checked out, a subfolder, a folder without git say nothing", async () => {
    const checkout = join(dir, 'gitops');
    mkdirSync(join(checkout, 'clusters'), { recursive: true });
    writeFileSync(join(checkout, 'clusters', 'a.yaml'), 'a: 1\n');
    git(checkout, 'init', '--quiet', '--initial-branch', 'main');
    git(checkout, 'add', '.');
    git(checkout, 'commit', '--quiet', '-m', 'first');
    const sha = git(checkout, 'rev-parse', 'HEAD');
    expect(await readCheckoutRevision(checkout, 'main')).toBe(`main@sha1:${sha}`);
    expect(await readCheckoutRevision(checkout, 'prod')).toBeUndefined();
    expect(await readCheckoutRevision(join(checkout, 'clusters'), 'main')).toBeUndefined();
    git(checkout, 'checkout', '--quiet', '-b', 'work');
    git(checkout, 'commit', '--quiet', '--allow-empty', '-m', 'second');
    expect(await readCheckoutRevision(checkout, 'main')).toBeUndefined();
    const plain = join(dir, 'plain');
    mkdirSync(plain);
    expect(await readCheckoutRevision(plain, 'main')).toBeUndefined();
    expect(await readCheckoutRevision(join(dir, 'absent'), 'main')).toBeUndefined();
  });
});
