// Secrets never leave in any encoding: the redactor's forms, secret files probed by hash, probe batches
// logged decoded, and a failed batch's excerpt without the frames.
import { mkdtempSync, rmSync } from 'node:fs';
import { createHash } from 'node:crypto';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { Redactor } from '../../src/engine/run-log.ts';
import { fileChange, describeChange } from '../../src/engine/changes.ts';
import { managedFile } from '../../phases/steps/managed-file.ts';
import { secretHits } from '../support/secrets.ts';
import { LocalRemote } from '../support/local-remote.ts';

const token = 'K10' + 'ab12'.repeat(16) + '::server:' + 'f00d'.repeat(12);
const key =
  '-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAEbm9uZQAAAAAAAAABAAAAMwAAAAtzc2gtZW\nQyNTUxOQAAACDxd3pEz0Ws7Ao1cM3ZgmZlNvQpb9b5Y8cQ9xVb7h3vJwAAAJAkbFfBJGxX\n-----END OPENSSH PRIVATE KEY-----';

describe('the redactor', () => {
  const r = new Redactor();
  r.add(token);
  r.add(key);

  it.each([0, 1, 2, 3, 4, 5])('finds the token base64-encoded after %i bytes of other text', (pre) => {
    const text = Buffer.from(`${'x'.repeat(pre)}token: ${token}\nmore\n`).toString('base64');
    expect(secretHits(text, [token]).length).toBeGreaterThan(0);
    expect(secretHits(r.apply(text), [token])).toEqual([]);
  });

  it('finds a multi-line key JSON-escaped, as evidence is logged', () => {
    const text = JSON.stringify({ evidence: { excerpt: `got ${key} back` } });
    expect(secretHits(text, [key]).length).toBeGreaterThan(0);
    expect(r.apply(text)).not.toContain('b3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAEbm9uZQAAAAAAAAABAAAAMwAAAAtzc2gtZW');
    expect(secretHits(r.apply(text), [key])).toEqual([]);
  });

  it('leaves ordinary text alone', () => {
    expect(r.apply('ok, 0 changed')).toBe('ok, 0 changed');
  });
});

describe('secret files are probed by hash', () => {
  it('the probe of a secret managed file never reads its content back', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'redaction-'));
    try {
      const path = join(dir, 'config.yaml');
      const step = managedFile({
        id: 'c',
        title: 'c',
        path: () => path,
        local: async () => undefined,
        content: () => `token: ${token}\n`,
        mode: '0600',
        secret: true,
      });
      const host = { name: 'h1', address: '127.0.0.1' } as any;
      const remote = new LocalRemote('h1');
      const probe = (step.probe!(host, {} as any) as any).file.command;
      const before = await remote.exec(probe);
      expect(before.code).toBe(1);
      const { writeFileSync, chmodSync } = await import('node:fs');
      writeFileSync(path, `token: ${token}\n`);
      chmodSync(path, 0o600);
      const same = await remote.exec(probe);
      expect(same.stdout).not.toContain('f00d');
      expect(secretHits(same.stdout, [token])).toEqual([]);
      const plan = step.plan!({ host, probe: { file: { stdout: same.stdout, stderr: '', code: same.code } }, local: undefined, ctx: {} as any } as any);
      expect((plan as any).changes).toEqual([]);
      writeFileSync(path, 'token: another\n');
      const other = await remote.exec(probe);
      const changed = (
        step.plan!({ host, probe: { file: { stdout: other.stdout, stderr: '', code: other.code } }, local: undefined, ctx: {} as any } as any) as any
      ).changes;
      expect(changed).toHaveLength(1);
      expect(describeChange(changed[0])).toEqual({ summary: `update ${path} (mode 0600)`, detail: '(secret content: diff not shown)' });
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('a secret file with the same content but another mode is a chmod', () => {
    const sha = (s: string) => createHash('sha256').update(s).digest('hex');
    const [c] = fileChange('/f', 'x', { content: null, sha256: sha('x'), mode: '644' }, { mode: '0600', secret: true });
    expect(describeChange(c).summary).toBe('chmod /f (mode 0600)');
  });
});
