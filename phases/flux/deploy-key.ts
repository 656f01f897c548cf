// The deploy key and the GitOps server's known_hosts, read on the operator's machine for the Secret
// flux-system/flux-system. The public half is derived from the private key (what `flux bootstrap` stores
// as identity.pub). The key is registered for redaction before anything else sees it.
import { readFile } from 'node:fs/promises';
import ssh2 from 'ssh2';
import { CauseError } from '../../src/errors.ts';
import type { DeployKey } from './manifests.ts';
import type { UpstreamPatterns } from '../../src/causes/upstream-patterns.ts';

/** ssh2's words for an encrypted key parsed without a passphrase (lib/protocol/keyParser.js). */
const ENCRYPTED_KEY = /passphrase/i;

/** @public gathered by test/unit/cause-matchers-exercised.test.ts (src/causes/upstream-patterns.ts) */
export const UPSTREAM_PATTERNS: UpstreamPatterns = { ENCRYPTED_KEY };

/** The OpenSSH public key line of an unencrypted private key, or why there is none. */
export function publicKeyOf(privateKey: string): { pub: string } | { problem: string } {
  const parsed = ssh2.utils.parseKey(privateKey);
  if (parsed instanceof Error)
    return { problem: ENCRYPTED_KEY.test(parsed.message) ? 'is protected by a passphrase' : `is not a usable SSH private key (${parsed.message})` };
  const key = Array.isArray(parsed) ? parsed[0] : parsed;
  if (!key || !key.isPrivateKey()) return { problem: 'is not a private key' };
  return { pub: `${key.type} ${key.getPublicSSH().toString('base64')}\n` };
}

export async function readDeployKey(keyFile: string, knownHostsFile: string, redact: (secret: string) => void): Promise<DeployKey> {
  const identity = await readFile(keyFile, 'utf8');
  redact(identity.trim());
  redact(Buffer.from(identity).toString('base64'));
  const pub = publicKeyOf(identity);
  if ('problem' in pub) {
    const seen = `${keyFile} ${pub.problem}`;
    throw new CauseError('FLUX_DEPLOY_KEY_UNUSABLE', { message: seen, evidence: { seen } });
  }
  return { identity, identityPub: pub.pub, knownHosts: await readFile(knownHostsFile, 'utf8') };
}
