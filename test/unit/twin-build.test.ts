import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { K3S_VERSION as LAB_VERSION } from '../../lab/inventory.ts';
import { installTwin } from '../../lab/twin/build.ts';

describe('k3s twin executable', () => {
  it('installs as one executable script `k3s` that claims the lab inventory version', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'twin-artifacts-'));
    const k3s = await installTwin(dir);
    expect(k3s).toBe(join(dir, 'k3s'));
    expect(statSync(k3s).mode & 0o111).toBe(0o111);
    // a shell loader: `k3s kubectl` straight to the lab's kubectl (k3s.yaml unless KUBECONFIG is set), `k3s
    // crictl` to the crictl the twin unpacked into its data dir once it has, anything else to the lab's private
    // node on a lab host (off the PATH), the PATH's node elsewhere
    expect(readFileSync(k3s, 'utf8').split('\n').slice(0, 2)).toEqual([
      '#!/bin/sh',
      '":" //; if [ "$1" = kubectl ] && [ -x /opt/bootstrap-lab/bin/kubectl ]; then shift; KUBECONFIG="${KUBECONFIG-/etc/rancher/k3s/k3s.yaml}" exec /opt/bootstrap-lab/bin/kubectl "$@"; fi; ' +
        'c=/var/lib/rancher/k3s/data/current/bin/crictl; if [ "$1" = crictl ] && [ -x "$c" ]; then shift; exec "$c" "$@"; fi; ' +
        'n=/opt/bootstrap-lab/bin/node; [ -x "$n" ] || n=node; exec "$n" "$0" "$@"',
    ]);
    // Nothing unpacked on this machine: the whole twin answers crictl (no agent here, so no container).
    expect(execFileSync(k3s, ['crictl', 'ps', '-q'], { encoding: 'utf8' })).toBe('');
    // upstream's words (k3s-io/k3s pkg/cli/cmds/root.go VersionPrinter): "<name> version <version> (<commit>)", then Go's version
    expect(execFileSync(k3s, ['--version'], { encoding: 'utf8' })).toMatch(
      new RegExp(`^k3s version ${LAB_VERSION.replace(/[.+]/g, '\\$&')} \\([0-9a-f]{8}\\)\ngo version go\\d+\\.\\d+\\.\\d+\n$`),
    );
    rmSync(dir, { recursive: true, force: true });
  }, 30_000);
});
