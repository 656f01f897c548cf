// Host key verification against known_hosts, and the named stops it ends in. ssh2 hands us the key the
// host presented (the SSH wire blob); we decide, and remember what we saw so that the stop can name the
// fingerprint (ssh2 itself would only say "Host denied (verification failed)").
import { CauseError } from '../errors.ts';
import { readProblem, readRegularText } from '../util/regular-file.ts';
import {
  checkHostKey,
  fingerprint,
  keyscanType,
  keyTypeOfBlob,
  knownHostsName,
  parseKnownHosts,
  type HostKeyVerdict,
  type KnownHostsEntry,
} from './known-hosts.ts';
import { shq } from '../util/shell.ts';
import type { SshTarget } from './types.ts';

/**
 * known_hosts entries of a file; a missing file records nothing (every host is unknown). One that is a FIFO,
 * device or folder (ssh.knownHostsFile is checked with the artifacts, but ~/.ssh/config's UserKnownHostsFile
 * is not) or cannot be read is SSH_CONFIG_UNREADABLE, refused before a byte is read.
 */
export function readKnownHosts(file: string): KnownHostsEntry[] {
  let text: string;
  try {
    text = readRegularText(file);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return [];
    const seen = `known_hosts file ${file} ${readProblem(err)}`;
    throw new CauseError('SSH_CONFIG_UNREADABLE', { message: seen, evidence: { command: `ls -l ${file}`, seen } });
  }
  return parseKnownHosts(text, file);
}

/** What one connection attempt saw of the host's key. */
export interface HostKeySeen {
  key: Buffer;
  verdict: HostKeyVerdict;
  /** The known_hosts file keeps its host names hashed: a line to add should be hashed too. */
  hashedFile: boolean;
}

/** A verifier for ssh2's `hostVerifier` that records what it saw into `seen`. */
export function makeHostVerifier(entries: KnownHostsEntry[], target: SshTarget, seen: { value?: HostKeySeen }) {
  return (key: Buffer): boolean => {
    const verdict = checkHostKey(entries, target.address, target.port, key);
    seen.value = { key, verdict, hashedFile: entries.some((e) => e.hosts.startsWith('|1|')) };
    return verdict.kind === 'known';
  };
}

const describe = (e: KnownHostsEntry) => `${keyTypeOfBlob(e.key)} ${fingerprint(e.key)} (${e.file} line ${e.line})`;

/** The named stop for a key that was not accepted; undefined when the key was known. */
export function hostKeyError(seen: HostKeySeen, target: SshTarget, via?: SshTarget): CauseError | undefined {
  const { key, verdict } = seen;
  if (verdict.kind === 'known') return undefined;
  const type = keyTypeOfBlob(key) ?? 'unknown-type';
  const fp = fingerprint(key);
  const where = `${target.name} (${target.address}:${target.port}${via ? ` via ${via.name}` : ''})`;
  const file = target.knownHostsFile;
  if (verdict.kind === 'unknown') {
    const scan = `ssh-keyscan${seen.hashedFile ? ' -H' : ''} -p ${target.port} -t ${keyscanType(type)} ${target.address}`;
    // Behind a jump host the operator's machine cannot reach the host: scan from the jump host.
    const command = via ? `ssh -p ${via.port} ${via.user}@${via.address} ${shq(scan)} >> ${shq(file)}` : `${scan} >> ${shq(file)}`;
    const others = verdict.otherTypes.length ? `; known_hosts records other key types for it: ${verdict.otherTypes.map(describe).join(', ')}` : '';
    return new CauseError('HOST_KEY_UNKNOWN', {
      host: target.name,
      message: `host key of ${where} is not in ${file}: ${type} ${fp}`,
      retryable: false,
      evidence: {
        command,
        excerpt: `${type} ${fp}`,
        seen:
          `${where} presented ${type} key ${fp}, which ${file} does not record for ${knownHostsName(target.address, target.port)}${others}. ` +
          `Compare it with \`ssh-keygen -lf /etc/ssh/ssh_host_${keyscanType(type)}_key.pub\` on the host's console (not over the network) before running the command.`,
      },
    });
  }
  const expected = verdict.kind === 'mismatch' ? verdict.expected : [verdict.entry];
  const first = expected[0];
  return new CauseError('HOST_KEY_MISMATCH', {
    host: target.name,
    message:
      verdict.kind === 'revoked'
        ? `host key of ${where} is marked @revoked in ${first.file} line ${first.line}`
        : `host key of ${where} differs from ${first.file} line ${first.line}: expected ${fingerprint(first.key)}, seen ${fp}`,
    retryable: false,
    evidence: {
      command: `ssh-keygen -F ${shq(knownHostsName(target.address, target.port))} -f ${shq(first.file)}`,
      excerpt: [...expected.map((e) => `${verdict.kind === 'revoked' ? 'revoked' : 'expected'}: ${describe(e)}`), `seen: ${type} ${fp}`].join('\n'),
      seen:
        verdict.kind === 'revoked'
          ? `${where} presented ${type} key ${fp}, marked @revoked at ${first.file} line ${first.line}`
          : `${where} presented ${type} key ${fp}; ${first.file} line ${first.line} records ${fingerprint(first.key)}`,
    },
  });
}
