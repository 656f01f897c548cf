// Publishing a folder as the head of a branch of the lab's GitOps repository: one commit of exactly the
// folder's files, without a parent, by a fixed author at a fixed time, forced onto the branch. The same
// content therefore always has the same revision, and a test sees the revision Flux will report.
import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
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

/** Synchronous form (labInventoryWithGitops is synchronous). Returns the commit's sha. */
export function publishGitopsSync(checkoutDir: string, branch = 'main', repo = gitServerPaths().repo): string {
  ensureServedRepo(repo);
  const index = mkdtempSync(join(tmpdir(), 'lab-gitops-index-'));
  // A private index and no hooks or user config: the commit depends on the folder's files alone.
  const env = {
    ...process.env,
    ...IDENTITY,
    GIT_DIR: repo,
    GIT_WORK_TREE: checkoutDir,
    GIT_INDEX_FILE: join(index, 'index'),
    GIT_CONFIG_NOSYSTEM: '1',
    HOME: index,
  };
  const git = (...args: string[]) => execFileSync('git', args, { env, encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] }).trim();
  try {
    git('add', '--all', '--force', '.');
    const tree = git('write-tree');
    const sha = git('commit-tree', tree, '-m', `lab: publish ${branch}`);
    git('update-ref', `refs/heads/${branch}`, sha);
    ensureServedRepo(repo); // what root just wrote, readable by the server's `git` user
    return sha;
  } finally {
    rmSync(index, { recursive: true, force: true });
  }
}

/** Commits `checkoutDir`'s content as the new head of `branch` of the served repository; returns the revision sha. */
export async function publishGitops(checkoutDir: string, branch = 'main'): Promise<string> {
  return publishGitopsSync(checkoutDir, branch);
}
