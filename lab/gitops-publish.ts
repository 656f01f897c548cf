// Publishing a folder as the head of a branch of the lab's GitOps repository: one commit of exactly the
// folder's files, without a parent, by a fixed author at a fixed time, forced onto the branch. The same
// content therefore always has the same revision, and a test sees the revision Flux will report. The folder
// gets the same commit in a repository of its own, as an operator's checkout after its push.
import { execFileSync } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ensureServedRepo, gitServerPaths } from './gitops-server.ts';

const IDENTITY = {
  GIT_AUTHOR_NAME: 'bootstrap lab',
  GIT_AUTHOR_EMAIL: 'lab@bootstrap.invalid',
  GIT_AUTHOR_DATE: '2026-01-01T00:00:00Z',
  GIT_COMMITTER_NAME: 'bootstrap lab',
  GIT_COMMITTER_EMAIL: 'lab@bootstrap.invalid',
  GIT_COMMITTER_DATE: '2026-01-01T00:00:00Z',
};

/**
 * Synchronous form (labInventoryWithGitops is synchronous). Returns the commit's sha. The checkout becomes a
 * repository of its own with that commit as `branch`, checked out: an operator's checkout after its push.
 */
export function publishGitopsSync(checkoutDir: string, branch = 'main', repo = gitServerPaths().repo): string {
  ensureServedRepo(repo);
  const index = mkdtempSync(join(tmpdir(), 'lab-gitops-index-'));
  // A private index and no hooks or user config: the commit depends on the folder's files alone.
  const env = { ...process.env, ...IDENTITY, GIT_WORK_TREE: checkoutDir, GIT_CONFIG_NOSYSTEM: '1', HOME: index };
  const git = (gitDir: string, indexFile: string | undefined, ...args: string[]) =>
    execFileSync('git', args, {
      env: { ...env, GIT_DIR: gitDir, ...(indexFile ? { GIT_INDEX_FILE: indexFile } : {}) },
      encoding: 'utf8',
      stdio: ['ignore', 'pipe', 'pipe'],
    }).trim();
  /** The folder's files committed without a parent as `branch` of `gitDir` (git never adds a `.git` folder). */
  const commit = (gitDir: string, indexFile?: string) => {
    git(gitDir, indexFile, 'add', '--all', '--force', '.');
    const sha = git(gitDir, indexFile, 'commit-tree', git(gitDir, indexFile, 'write-tree'), '-m', `lab: publish ${branch}`);
    git(gitDir, indexFile, 'update-ref', `refs/heads/${branch}`, sha);
    return sha;
  };
  try {
    const sha = commit(repo, join(index, 'index'));
    ensureServedRepo(repo); // what root just wrote, readable by the server's `git` user
    const own = join(checkoutDir, '.git');
    if (!existsSync(own))
      execFileSync('git', ['init', '--quiet', checkoutDir], { env: { ...process.env, GIT_CONFIG_NOSYSTEM: '1', HOME: index }, stdio: 'ignore' });
    // Its own index: `git status` in the checkout shows nothing to commit. Same files, author and time: the same sha.
    if (commit(own) !== sha) throw new Error(`${checkoutDir}: its own commit differs from the published ${sha}`);
    git(own, undefined, 'symbolic-ref', 'HEAD', `refs/heads/${branch}`);
    return sha;
  } finally {
    rmSync(index, { recursive: true, force: true });
  }
}

/** Commits `checkoutDir`'s content as the new head of `branch` of the served repository; returns the revision sha. */
export async function publishGitops(checkoutDir: string, branch = 'main'): Promise<string> {
  return publishGitopsSync(checkoutDir, branch);
}
