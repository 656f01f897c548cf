// The sha256 of a file this tool uploaded, remembered on the host beside the file's identity, so that a
// converged run does not hash the k3s binary (70 MB) and the image archives (hundreds of MB on a real host:
// seconds of CPU and disk reads on every host, every run) again to learn that they are unchanged.
//
// An upload checks the copy it wrote against the sha256 it sent and then records `<sha256> <identity>` in
// STAMPS_DIR; the identity is the inode, size and modification and change times in nanoseconds, read after
// the rename. Any write to the file, or another file put in its place, changes its ctime or inode (the trust
// git's index and src/util/file-memo.ts put in the same fields), and the probe hashes every file whose
// identity is not the recorded one. The probe only reads: a file placed otherwise (an older release of this
// tool, by hand) is hashed on every run until an upload replaces it.
import { shq } from '../util/shell.ts';

/** This tool's own folder on a host (the stamps, nothing else): a reset takes it away with k3s's files. */
export const HOST_STATE_DIR = '/var/lib/bootstrap';

/** Root's, 0700: one stamp file per uploaded path. */
const STAMPS_DIR = `${HOST_STATE_DIR}/sums`;

/** The upload script's status when the copy is not what was sent. */
export const COPY_MISMATCH_EXIT = 9;

/** GNU stat's identity of a file: inode, size, mtime and ctime to the nanosecond. */
const IDENTITY_FORMAT = '%i %s %.9Y %.9Z';

/** The stamp file of a remote path: the path percent-encoded into one file name. */
function stampOf(path: string, dir: string): string {
  return `${dir}/${encodeURIComponent(path)}`;
}

/**
 * A command (run as root) that prints sha256sum's `<hex>  <name>` line for each of `paths` that exists:
 * from its stamp where the file's identity is the recorded one, else from one sha256sum for all the others.
 * A missing file prints nothing (as `sha256sum … 2>/dev/null` did). One stat, and no other process when every
 * stamp holds. `dir`: where the stamps are (tests put them elsewhere).
 */
export function sumsProbe(paths: string[], dir = STAMPS_DIR): string {
  const cases = paths.map((p) => `${shq(p)}) k=${shq(stampOf(p, dir))} ;;`).join(' ');
  return [
    'set --',
    // The heredoc keeps the loop in this shell (a pipe would run it in a subshell and lose `set --`).
    `while read -r a b c d f; do case $f in ${cases} *) continue ;; esac`,
    's=; t=; read -r s t < "$k" 2>/dev/null',
    `if [ -n "$s" ] && [ "$t" = "$a $b $c $d" ]; then printf '%s  %s\\n' "$s" "$f"; else set -- "$@" "$f"; fi`,
    `done <<EOF\n$(stat -c '${IDENTITY_FORMAT} %n' -- ${paths.map(shq).join(' ')} 2>/dev/null)\nEOF`,
    '[ $# -eq 0 ] || sha256sum -- "$@" 2>/dev/null',
  ].join('\n');
}

/**
 * The end of an upload's script, after the copy is written to `tmp` and before it is renamed to `path`: its
 * sha256 checked against `sha256` (a copy that is not what was sent stops the upload with both sums), and
 * after the rename, the stamp. Commands to be joined with `&&`.
 */
export function checkedUpload(tmp: string, path: string, sha256: string, dir = STAMPS_DIR): { check: string; stamp: string } {
  const stamp = stampOf(path, dir);
  return {
    check: `{ s=$(sha256sum < ${shq(tmp)}) && s=\${s%% *} && [ "$s" = ${shq(sha256)} ] || { echo "the uploaded copy's sha256 is \${s:-unreadable}, not the "${shq(sha256)}" that was sent" >&2; rm -f ${shq(tmp)}; exit ${COPY_MISMATCH_EXIT}; }; }`,
    // Best effort, as a cache is: without its stamp the file is hashed on every run, nothing worse.
    stamp: `{ { ${[
      `mkdir -p -m 700 ${shq(dir)}`,
      `printf '%s %s\\n' ${shq(sha256)} "$(stat -c '${IDENTITY_FORMAT}' -- ${shq(path)})" > ${shq(`${stamp}.tmp`)}`,
      `mv -f ${shq(`${stamp}.tmp`)} ${shq(stamp)}`,
    ].join(' && ')}; } 2>/dev/null || :; }`,
  };
}
