// What Flux's source-controller (go-git through fluxcd/pkg/git/gogit, host keys through
// fluxcd/pkg/ssh/knownhosts) reports when a fetch fails, from what real `git` and `ssh` print for the same
// failure. The twin fetches with the git CLI; the operator sees go-git's words, as upstream writes them:
//   source-controller internal/controller/gitrepository_controller.go gitCheckout:
//     "failed to checkout and determine revision: %w"
//   fluxcd/pkg git/gogit/clone.go cloneBranch: with a last observed revision the remote is listed first,
//     "unable to list remote for '%s': %w"; a clone fails with "unable to clone '%s': %w"; a missing branch
//     is git.ErrRepositoryNotFound: "unable to clone: <go-git error>: git repository: '<url>'" with go-git's
//     `couldn't find remote ref "refs/heads/<branch>"`
//   golang.org/x/crypto/ssh: "ssh: handshake failed: " + knownhosts "key is unknown" (no entry for the
//     host) / "key mismatch" (another key), or "ssh: unable to authenticate, attempted methods
//     [none publickey], no supported methods remain"
export function goGitError(stderr: string, address: string): string {
  if (/REMOTE HOST IDENTIFICATION HAS CHANGED/.test(stderr)) return 'ssh: handshake failed: knownhosts: key mismatch';
  if (/Host key verification failed|No \S+ host key is known/.test(stderr)) return 'ssh: handshake failed: knownhosts: key is unknown';
  if (/Permission denied \(publickey/.test(stderr))
    return 'ssh: handshake failed: ssh: unable to authenticate, attempted methods [none publickey], no supported methods remain';
  if (/Connection refused/.test(stderr)) return `dial tcp ${address}: connect: connection refused`;
  if (/Connection timed out|Operation timed out/.test(stderr)) return `dial tcp ${address}: i/o timeout`;
  if (/No route to host/.test(stderr)) return `dial tcp ${address}: connect: no route to host`;
  if (/does not appear to be a git repository|repository .* not found/i.test(stderr)) return 'repository not found';
  const last = stderr
    .split('\n')
    .map((l) => l.trim())
    .filter((l) => l && !l.startsWith('Warning:'))
    .pop();
  return last ?? 'unknown error';
}

const CHECKOUT = 'failed to checkout and determine revision: ';

/** The Ready message of a failed listing (the source had a revision) or clone (it had none). */
export function fetchFailedMessage(stage: 'list' | 'clone', url: string, cause: string): string {
  return `${CHECKOUT}${stage === 'list' ? `unable to list remote for '${url}'` : `unable to clone '${url}'`}: ${cause}`;
}

/** The Ready message when the branch does not exist. */
export function branchNotFoundMessage(url: string, branch: string): string {
  return `${CHECKOUT}unable to clone: couldn't find remote ref "refs/heads/${branch}": git repository: '${url}'`;
}

/** host:port of an ssh:// URL (go-git dials port 22 when none is given). */
export function sshAddress(url: string): string {
  const m = /^ssh:\/\/(?:[^@/]+@)?([^/:]+)(?::(\d+))?/.exec(url);
  return m ? `${m[1]}:${m[2] ?? '22'}` : url;
}
