// Root through `sudo -n sh -c`: the command survives quoting whole, whatever it holds.
import { execFileSync } from 'node:child_process';
import { describe, expect, it } from 'vitest';
import { sudoCommand, sudoStopCommand } from '../../src/transport/sudo.ts';
import { shq } from '../../src/util/shell.ts';

/** What sh makes of a word: run `printf %s WORD` through a real shell. */
const shWord = (word: string) => execFileSync('sh', ['-c', `printf %s ${word}`]).toString();

describe('sudo command lines', () => {
  it('quotes any value as one sh word', () => {
    for (const v of ['plain', "it's", 'a "b" $HOME `id` \\n', 'semi; colon && pipe | x', '', "''", 'new\nline']) {
      expect(shWord(shq(v))).toBe(v);
    }
    expect(shq('/etc/rancher/k3s/config.yaml')).toBe('/etc/rancher/k3s/config.yaml');
  });

  it('wraps the whole compound command in sudo -n sh -c, with an optional tag as $0', () => {
    expect(sudoCommand('a && b | c')).toBe("sudo -n sh -c 'a && b | c'");
    expect(sudoCommand("echo 'x'", 'bootstrap-0a1b2c3d')).toBe(`sudo -n sh -c 'echo '\\''x'\\''' bootstrap-0a1b2c3d`);
  });

  it('stops a tagged command by a pattern that does not match its own command line', () => {
    const stop = sudoStopCommand('bootstrap-0a1b2c3d');
    expect(stop).toContain('bootstrap-0a1b2c3[d]$');
    expect(stop).not.toMatch(/bootstrap-0a1b2c3d/);
    expect(new RegExp('bootstrap-0a1b2c3[d]$').test('sh -c sleep 9 bootstrap-0a1b2c3d')).toBe(true);
  });
});
