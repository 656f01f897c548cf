// Which credentials to offer a host. In order: the identity file the inventory (or ~/.ssh/config) names;
// else the ssh-agent (SSH_AUTH_SOCK), together with the first default key file that exists
// (~/.ssh/id_ed25519, then ~/.ssh/id_rsa) — as `ssh` offers both. The tool never asks for a passphrase:
// a protected key belongs in the agent.
import { join } from 'node:path';
import ssh2 from 'ssh2';
import { CauseError } from '../errors.ts';
import { readProblem, readRegularFile } from '../util/regular-file.ts';
import type { SshTarget } from './types.ts';
import type { UpstreamPatterns } from '../causes/upstream-patterns.ts';

/** ssh2's words for an encrypted key parsed without a passphrase (lib/protocol/keyParser.js). */
const ENCRYPTED_KEY = /passphrase/i;

/** @public gathered by test/unit/cause-matchers-exercised.test.ts (src/causes/upstream-patterns.ts) */
export const UPSTREAM_PATTERNS: UpstreamPatterns = { ENCRYPTED_KEY };

export interface AuthChoice {
  privateKey?: Buffer;
  agent?: string;
  /** What was offered, in words, for evidence ("identity file ~/.ssh/id_ed25519", "ssh-agent"). */
  offered: string[];
}

export interface IdentityEnv {
  home: string;
  /** The ssh-agent socket (SSH_AUTH_SOCK), if any. */
  authSock?: string;
}

const DEFAULT_KEYS = ['id_ed25519', 'id_rsa'];

/** A private key file's bytes, or why it cannot be used (a FIFO or device: refused before a byte is read). */
function readKey(path: string): { key: Buffer } | { problem: string } {
  let data: Buffer;
  try {
    data = readRegularFile(path);
  } catch (err) {
    return { problem: readProblem(err) };
  }
  const parsed = ssh2.utils.parseKey(data);
  if (parsed instanceof Error) {
    return {
      problem: ENCRYPTED_KEY.test(parsed.message)
        ? 'is protected by a passphrase (load it with ssh-add instead)'
        : `is not a usable private key (${parsed.message})`,
    };
  }
  return { key: data };
}

export function chooseAuth(target: SshTarget, env: IdentityEnv): AuthChoice {
  if (target.identityFile !== undefined) {
    const r = readKey(target.identityFile);
    if ('problem' in r) {
      throw new CauseError('SSH_IDENTITY_UNUSABLE', {
        host: target.name,
        message: `identity file ${target.identityFile} ${r.problem}`,
        evidence: { command: `ssh-keygen -y -f ${target.identityFile}`, seen: `${target.identityFile} ${r.problem}` },
      });
    }
    return { privateKey: r.key, offered: [`identity file ${target.identityFile}`] };
  }
  const choice: AuthChoice = { offered: [] };
  if (env.authSock) {
    choice.agent = env.authSock;
    choice.offered.push(`ssh-agent (${env.authSock})`);
  }
  for (const name of DEFAULT_KEYS) {
    const path = join(env.home, '.ssh', name);
    const r = readKey(path);
    if ('key' in r) {
      choice.privateKey = r.key;
      choice.offered.push(`identity file ${path}`);
      break;
    }
    // A default key that exists but cannot be used is only worth a stop when nothing else is on offer.
    if (!r.problem.startsWith('does not exist') && !choice.agent) {
      throw new CauseError('SSH_IDENTITY_UNUSABLE', {
        host: target.name,
        message: `default identity ${path} ${r.problem}`,
        evidence: { command: `ssh-keygen -y -f ${path}`, seen: `${path} ${r.problem}; no ssh-agent (SSH_AUTH_SOCK unset)` },
      });
    }
  }
  if (choice.offered.length === 0) {
    throw new CauseError('SSH_AUTH_FAILED', {
      host: target.name,
      message: `no SSH identity to offer ${target.name}`,
      evidence: {
        seen: `no ssh.identityFile, no IdentityFile in ~/.ssh/config, SSH_AUTH_SOCK unset, and neither ${join(env.home, '.ssh', 'id_ed25519')} nor id_rsa exists`,
      },
    });
  }
  return choice;
}
