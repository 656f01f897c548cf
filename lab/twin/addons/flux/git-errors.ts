// What Flux's source-controller (go-git through fluxcd/pkg/git/gogit, host keys through
// fluxcd/pkg/ssh/knownhosts) reports when a clone fails, from what real `git` and `ssh` print for the same
// failure. The twin clones with the git CLI; the operator sees go-git's words, as from upstream:
//   source-controller internal/controller/gitrepository_controller.go gitCheckout:
//     "failed to checkout and determine revision: %w"
//   fluxcd/pkg/git/gogit clone.go: "unable to clone '%s': %w"; a missing branch is go-git's
//     `couldn't find remote ref "refs/heads/<branch>"`
//   golang.org/x/crypto/ssh: "ssh: handshake failed: " + knownhosts "key is unknown" / "key mismatch",
//     or "ssh: unable to authenticate, attempted methods [none publickey], no supported methods remain"
export function goGitError(stderr: string, branch: string, address: string): string {
  if (/REMOTE HOST IDENTIFICATION HAS CHANGED/.test(stderr)) return 'ssh: handshake failed: knownhosts: key mismatch';
  if (/Host key verification failed|No \S+ host key is known/.test(stderr)) return 'ssh: handshake failed: knownhosts: key is unknown';
  if (/Permission denied \(publickey/.test(stderr)) return 'ssh: handshake failed: ssh: unable to authenticate, attempted methods [none publickey], no supported methods remain';
  if (/Remote branch .* not found|Could not find remote branch/.test(stderr)) return `couldn't find remote ref "refs/heads/${branch}"`;
  if (/Connection refused/.test(stderr)) return `dial tcp ${address}: connect: connection refused`;
  if (/Connection timed out|Operation timed out/.test(stderr)) return `dial tcp ${address}: i/o timeout`;
  if (/No route to host/.test(stderr)) return `dial tcp ${address}: connect: no route to host`;
  if (/does not appear to be a git repository|repository .* not found/i.test(stderr)) return 'repository not found';
  const last = stderr.split('\n').map((l) => l.trim()).filter((l) => l && !l.startsWith('Warning:')).pop();
  return last ?? 'unknown error';
}

/** The Ready message of a failed fetch. */
export function cloneFailedMessage(url: string, cause: string): string {
  return `failed to checkout and determine revision: unable to clone '${url}': ${cause}`;
}

/** host:port of an ssh:// URL (go-git dials port 22 when none is given). */
export function sshAddress(url: string): string {
  const m = /^ssh:\/\/(?:[^@/]+@)?([^/:]+)(?::(\d+))?/.exec(url);
  return m ? `${m[1]}:${m[2] ?? '22'}` : url;
}
