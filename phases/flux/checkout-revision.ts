// The revision Flux's GitRepository reports when it serves what the operator's GitOps checkout holds. The
// run pushes nothing and renders Cilium's release from the checkout (src/gitops/cilium-release.ts), and the
// gate's parity compares the live HelmRelease with that render: the checkout is the run's truth. So a
// source that already serves the checkout's commit of gitops.branch needs no fetch to prove it; one that
// serves another commit (a push from the checkout, a push from elsewhere) is asked to fetch, as before.
//
// The format is source-controller's for a branch: `<branch>@sha1:<commit>` (fluxcd/source-controller
// v1.9.1, internal/controller/gitrepository_controller.go commitReference: commit.String() when spec.ref
// names no full reference; fluxcd/pkg git/v0.52.0, git/git.go Commit.String: the reference's part after
// `refs/heads/`, `@`, Hash.Digest `<algorithm>:<hash>`, where Algorithm is `sha1` for a 40-digit hash and
// `<unknown>` otherwise; git/gogit/clone.go cloneBranch builds the same `branch@digest` to skip a clone).
// The commit is the checkout's `refs/heads/<branch>`, and only while HEAD is that commit (the working tree
// parity renders is then that branch's): anything else — no git, not a repository, another branch checked
// out, a SHA-256 repository — says nothing, and the wait fetches as before.
import { realpath } from 'node:fs/promises';
import { runFact } from '../../src/engine/facts.ts';
import { runLocal, type LocalResult } from '../../src/local/process.ts';

/** The checkout's revision as source-controller would report it, undefined when the checkout cannot tell (the flux phase's prepare). */
export const checkoutRevision = runFact<string | undefined>('flux.checkoutRevision');

const GIT_TIMEOUT_MS = 10_000;

/**
 * Pure: the revision of `branch` from `git rev-parse --show-toplevel refs/heads/<branch>^{commit} HEAD^{commit} --`
 * run in `checkout` (its top level, the branch's commit, HEAD's commit, `--`), or undefined.
 */
export function revisionOf(checkout: string, branch: string, revParse: Pick<LocalResult, 'code' | 'stdout'>): string | undefined {
  if (revParse.code !== 0) return undefined;
  const [top, branchHead, head, ...rest] = revParse.stdout.trim().split('\n');
  // A folder inside another repository is not a checkout of its own (gitops.path is relative to the repository's root).
  if (top !== checkout || rest.join() !== '--' || branchHead !== head || !/^[0-9a-f]{40}$/.test(branchHead)) return undefined;
  return `${branch}@sha1:${branchHead}`;
}

/** The checkout's revision of `branch` (one `git rev-parse` on this machine), undefined when it cannot be read. */
export async function readCheckoutRevision(checkout: string, branch: string, run = runLocal): Promise<string | undefined> {
  const dir = await realpath(checkout).catch(() => undefined);
  if (!dir) return undefined;
  // `--` after them: both are revisions, never paths.
  const args = ['-C', dir, 'rev-parse', '--show-toplevel', `refs/heads/${branch}^{commit}`, 'HEAD^{commit}', '--'];
  return revisionOf(dir, branch, await run('git', args, GIT_TIMEOUT_MS));
}
