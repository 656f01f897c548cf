import { mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { labBlock, labBlocks, placeholders, runBlock, substitute } from '../support/runbook-blocks.ts';

const RUNBOOK = [
  '# Replace a server',
  '',
  '```sh',
  'echo read only',
  '```',
  '',
  '```sh lab check',
  'bootstrap <env> --replace <server> --check',
  '```',
  '',
  '1. Then:',
  '   ```sh lab replace',
  '   bootstrap <env> --replace <server>',
  '   ssh ops@<survivor> sudo k3s kubectl get nodes',
  '   ```',
  '',
  '````text',
  '```sh lab inside',
  'not a block of its own',
  '```',
  '````',
  '~~~sh lab',
  'echo tilde',
  '~~~',
].join('\n');

describe('runbook lab blocks', () => {
  it('finds only the blocks marked `sh lab`, with their names and lines, indentation removed', () => {
    const blocks = labBlocks(RUNBOOK);
    expect(blocks).toEqual([
      { name: 'check', line: 7, code: 'bootstrap <env> --replace <server> --check' },
      { name: 'replace', line: 12, code: 'bootstrap <env> --replace <server>\nssh ops@<survivor> sudo k3s kubectl get nodes' },
      { name: undefined, line: 22, code: 'echo tilde' },
    ]);
  });

  it('picks one block by name, and refuses a name that is missing', () => {
    expect(labBlock(RUNBOOK, 'check').code).toContain('--check');
    expect(() => labBlock(RUNBOOK, 'restore')).toThrow('expected exactly one `sh lab restore` block, found 0');
  });

  it('replaces placeholders and names those without a value', () => {
    const code = labBlock(RUNBOOK, 'replace').code;
    expect(placeholders(code)).toEqual(['env', 'server', 'survivor']);
    expect(() => substitute(code, { env: 'lab', server: 'k3s-lab-2' })).toThrow('no value for <survivor>');
    expect(substitute(code, { env: 'lab', server: 'k3s-lab-2', survivor: '10.77.3.10' })).toBe(
      'bootstrap lab --replace k3s-lab-2\nssh ops@10.77.3.10 sudo k3s kubectl get nodes',
    );
  });

  it('leaves shell redirections alone', () => {
    expect(placeholders('cmd 2>&1 < in.txt > out.txt')).toEqual([]);
  });

  it('runs a block through bash where `bootstrap <env>` finds the inventory, stopping at the first failure', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'runbook-unit-'));
    const inventory = join(dir, 'anything.yaml');
    writeFileSync(inventory, 'environment: demo\n');
    const run = await runBlock(
      { line: 1, code: 'cat inventory/<env>.yaml\ntype bootstrap >/dev/null && echo has-bootstrap\necho <word>\nfalse\necho never' },
      { env: 'demo', inventory, stateDir: dir, values: { word: 'hello' } },
    );
    expect(run.code).toBe(1);
    expect(run.stdout).toBe('environment: demo\nhas-bootstrap\nhello\n');
  });

  it("fails a block whose output carries a secret of the environment, base64-encoded too (as every lab run's)", async () => {
    const dir = mkdtempSync(join(tmpdir(), 'runbook-leak-'));
    const inventory = join(dir, 'demo.yaml');
    writeFileSync(inventory, 'environment: demo\n');
    mkdirSync(join(dir, 'demo'));
    const secret = 'runbook-block-token-0123456789abcdef';
    writeFileSync(join(dir, 'demo', 'cluster-token.json'), JSON.stringify({ secret }));
    const env = { env: 'demo', inventory, stateDir: dir };
    await expect(runBlock({ line: 7, code: `echo ${Buffer.from(`x${secret}`).toString('base64')} >&2` }, env)).rejects.toThrow(
      /the runbook block \(line 7\) leaked secrets:\nstderr: /,
    );
    expect((await runBlock({ line: 1, code: 'echo nothing secret' }, env)).code).toBe(0);
  });
});
