// bootstrap <env> --reset in the lab, through the commands of runbooks/reset.md as an operator types them, on
// ONE 3-server + 1-agent cluster: a cold build, then what real Cilium leaves that the twins do not (a
// CILIUM_ chain and the jump to it, written as iptables-nft writes them, since a stock Debian 12 host has
// nft and no iptables; pins in a BPF filesystem; a cilium_ link pair) planted on a server and the agent;
// `--reset --check` lists them and changes nothing; `--reset --node <agent> --yes` takes just the agent out
// (its Node gone, the servers untouched); `--reset --yes` takes everything down: on every host no k3s
// process, no VIP, no Cilium link, chain or pin, no k3s file; the token moved aside in the state folder, the
// backups kept; then a cold build on the same hosts makes a new cluster with a new token.
import { existsSync, mkdirSync, readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { beforeAll, expect, it } from 'vitest';
import { hostExec } from '../../lab/api.ts';
import { NET } from '../../lab/config.ts';
import { describeAsRoot } from '../support/env.ts';
import { ensureLab, hosts } from '../support/lab.ts';
import { bootstrap, freshStateDir, hostFingerprint, resetCluster, voters } from '../support/cluster.ts';
import { labInventory } from '../support/lab-inventory.ts';
import { labBlock, runBlock } from '../support/runbook-blocks.ts';
import { repoRoot } from '../support/cli.ts';

const RUNBOOK = readFileSync(`${repoRoot}/runbooks/reset.md`, 'utf8');
const LONG = 600_000;
const AGENT = 'k3s-lab-agent-1';
const ALL_VOTERS = { 'k3s-lab-1': 'True', 'k3s-lab-2': 'True', 'k3s-lab-3': 'True' };

/** What real Cilium leaves on a host and the twins do not make (the twins write the CNI config and /var/run/cilium). */
const PLANT_CILIUM_LEFTOVERS = [
  // Cilium's pins: a BPF filesystem of the host's own (each mount is a new instance), its cilium/ folder and a map's name.
  'mountpoint -q /sys/fs/bpf || mount -t bpf bpf /sys/fs/bpf',
  'mkdir -p /sys/fs/bpf/cilium/devices/eth0/links /sys/fs/bpf/tc/globals/cilium_calls_hostns',
  // Its chain and the feeder rule that jumps to it, as iptables-nft writes them into nftables.
  'nft add table ip filter',
  "nft add chain ip filter INPUT '{ type filter hook input priority 0; policy accept; }'",
  'nft add chain ip filter CILIUM_INPUT',
  `nft add rule ip filter INPUT counter jump CILIUM_INPUT comment '"cilium-feeder: CILIUM_INPUT"'`,
  // A link of its naming (cilium_geneve), a veth pair here.
  'ip link add cilium_geneve type veth peer name cilium_gnv_peer',
].join(' && ');

/** Everything of k3s and Cilium left on a host: processes, the VIP, links, chains, pins, files (this tool's own folder too). */
async function leftovers(host: string): Promise<string[]> {
  const r = await hostExec(
    host,
    [
      // k3s, its containers' shims, etcd (the brackets keep grep from finding itself).
      "ps -e -o args= | grep -E '[/]usr/local/bin/k3s|[c]ontainerd-shim|(^|/)[e]tcd( |$)' | sed 's/^/process /'",
      `ip -o -4 addr show | awk '$4 == "${NET.vip}/32" { print "vip " $2 }'`,
      'ip -o link show | awk -F\': \' \'{ sub(/@.*/, "", $2) } $2 ~ /^(cilium_|lxc)/ { print "link " $2 }\'',
      "nft list ruleset 2>/dev/null | grep -i cilium | sed 's/^\\s*/nft /; s/counter packets [0-9]* bytes [0-9]* //'",
      'for p in /sys/fs/bpf/cilium /sys/fs/bpf/tc/globals/cilium_* /etc/cni/net.d/*cilium* /opt/cni/bin/cilium-cni /var/run/cilium /var/lib/rancher/k3s /etc/rancher /var/lib/kubelet /run/k3s /usr/local/bin/k3s /etc/systemd/system/k3s.service /etc/systemd/system/k3s-agent.service /etc/systemd/system/k3s.service.env /etc/systemd/system/k3s-agent.service.env /var/lib/bootstrap; do [ -e "$p" ] && echo "file $p"; done',
      'true',
    ].join('; '),
  );
  return r.stdout.trim().split('\n').filter(Boolean);
}

describeAsRoot('bootstrap <env> --reset', () => {
  const stateDir = freshStateDir();
  const envState = join(stateDir, 'lab');
  let inventory: string;
  /** The runbook's block `name`, run; its output kept for the runbook when BOOTSTRAP_CAPTURE_DIR names a folder. */
  const block = async (name: string, values: Record<string, string> = {}) => {
    const r = await runBlock(labBlock(RUNBOOK, name), { env: 'lab', inventory, stateDir, values });
    const dir = process.env.BOOTSTRAP_CAPTURE_DIR;
    // A block run twice (the check, before and after) keeps both: -1, -2.
    const file = (n: number): string => (existsSync(join(dir!, `reset-${name}-${n}.txt`)) ? file(n + 1) : join(dir!, `reset-${name}-${n}.txt`));
    if (dir) writeFileSync(file(1), `${r.stdout}${r.stderr}\n(exit ${r.code})\n`);
    return r;
  };

  beforeAll(async () => {
    await ensureLab();
    // Right after the lab booted, a k3s of the last file's cluster may still be starting (enabled at boot):
    // reset until no host runs or keeps any of it, so the cold build below founds a cluster of its own.
    for (let attempt = 0; ; attempt++) {
      await resetCluster();
      const left = (await Promise.all(hosts().map((h) => leftovers(h.name))))
        .flat()
        .filter((l) => /^process |^file \/(var\/lib\/rancher|etc\/rancher)/.test(l));
      if (!left.length) break;
      if (attempt === 2) throw new Error(`the lab hosts keep k3s after three resets: ${left.join(', ')}`);
      await new Promise((r) => setTimeout(r, 5_000));
    }
    inventory = labInventory();
    const cold = await bootstrap(['--until', 'cilium'], { stateDir, inventory });
    expect(cold.code, cold.stdout + cold.stderr).toBe(0);
    for (const h of ['k3s-lab-2', AGENT]) await hostExec(h, PLANT_CILIUM_LEFTOVERS);
    // A backup of the environment's (its contents do not matter here): a reset keeps the backups.
    mkdirSync(join(envState, 'backups', 'kept'), { recursive: true });
    writeFileSync(join(envState, 'backups', 'kept', 'manifest.json'), '{}\n');
  }, LONG);

  it(
    '--reset --check lists per host what it would remove, the planted leftovers too, and changes nothing; without a terminal and --yes it is refused',
    async () => {
      const before = await Promise.all(hosts().map((h) => hostFingerprint(h.name)));
      const left = await leftovers('k3s-lab-2');
      expect(left).toEqual(
        expect.arrayContaining([
          'link cilium_geneve',
          'link cilium_gnv_peer',
          'file /sys/fs/bpf/cilium',
          'file /sys/fs/bpf/tc/globals/cilium_calls_hostns',
          'file /var/lib/bootstrap',
        ]),
      );
      expect(left.filter((l) => l.startsWith('nft '))).toHaveLength(2);
      const check = await block('check');
      expect(check.code, check.stdout + check.stderr).toBe(2);
      expect(check.stdout).toContain(
        '▸ reset: take the cluster down: agents, then servers, the founder last [k3s-lab-agent-1, k3s-lab-2, k3s-lab-3, k3s-lab-1]',
      );
      expect(check.stdout).toContain("would remove Cilium's links cilium_gnv_peer, cilium_geneve");
      expect(check.stdout).toContain("would remove Cilium's BPF pins: /sys/fs/bpf/cilium, 1 map /sys/fs/bpf/tc/globals/cilium_*");
      expect(check.stdout).toContain("would remove Cilium's iptables rules through nft (no iptables on the host): 1 chain CILIUM_INPUT, 1 jump to them");
      expect(check.stdout).toContain("would remove bootstrap's own state on the host: /var/lib/bootstrap (the sums of the files it uploaded)");
      expect(check.stdout).toContain('would stop k3s on k3s-lab-2, delete its Node through a server that stays (k3s-lab-3, k3s-lab-1');
      expect(check.stdout).toMatch(/would move aside on the operator's machine .*cluster-token\.json → .*cluster-token\.json\.reset-/);
      expect(await Promise.all(hosts().map((h) => hostFingerprint(h.name)))).toEqual(before);
      expect(await leftovers('k3s-lab-2')).toEqual(left);
      expect(existsSync(join(envState, 'cluster-token.json'))).toBe(true);

      // No terminal to type the name on, no --yes: a usage error before any host is dialled.
      const refused = await bootstrap(['--reset'], { stateDir, inventory });
      expect(refused.code, refused.stdout + refused.stderr).toBe(64);
      expect(refused.stderr).toContain('pass --yes');
      expect(await voters()).toEqual(ALL_VOTERS);
    },
    LONG,
  );

  it(
    '--reset --node <agent> --yes takes just the agent out: its Node gone, the host clean, the servers untouched',
    async () => {
      const servers = await Promise.all(['k3s-lab-1', 'k3s-lab-2', 'k3s-lab-3'].map((h) => hostFingerprint(h)));
      const r = await block('node', { node: AGENT });
      expect(r.code, r.stdout + r.stderr).toBe(0);
      expect(r.stdout).toContain(`stop k3s-agent on ${AGENT}, delete its Node through a server`);
      const nodes = await hostExec('k3s-lab-1', "k3s kubectl get nodes -o jsonpath='{.items[*].metadata.name}'");
      expect(nodes.stdout.trim().split(' ').sort()).toEqual(['k3s-lab-1', 'k3s-lab-2', 'k3s-lab-3']);
      expect(await leftovers(AGENT)).toEqual([]);
      expect(await Promise.all(['k3s-lab-1', 'k3s-lab-2', 'k3s-lab-3'].map((h) => hostFingerprint(h)))).toEqual(servers);
      expect(await voters()).toEqual(ALL_VOTERS);
      expect(existsSync(join(envState, 'cluster-token.json'))).toBe(true);
    },
    LONG,
  );

  it(
    '--reset --yes takes everything down: nothing of k3s or Cilium on any host, the token moved aside (0600), the backups kept',
    async () => {
      const token = readFileSync(join(envState, 'cluster-token.json'), 'utf8');
      const r = await block('reset');
      expect(r.code, r.stdout + r.stderr).toBe(0);
      // The first server left etcd, stopped first, before it was wiped; the second-to-last could not (one of two
      // members would answer once it is stopped): said, and wiped with the cluster.
      expect(r.stdout).toMatch(/k3s-lab-2 {2}stop k3s on k3s-lab-2, delete its Node through a server that stays .*: ok after/);
      expect(r.stdout).toContain('member removal skipped: 1 of 2 etcd members answer without k3s-lab-3, 2 are needed to remove its member');
      for (const h of hosts()) expect(await leftovers(h.name), h.name).toEqual([]);
      const aside = readdirSync(envState).filter((f) => f.startsWith('cluster-token.json.reset-'));
      expect(aside).toHaveLength(1);
      expect(r.stdout).toContain(`cluster-token.json → ${join(envState, aside[0])}`);
      expect(existsSync(join(envState, 'cluster-token.json'))).toBe(false);
      expect(readFileSync(join(envState, aside[0]), 'utf8')).toBe(token);
      expect(statSync(join(envState, aside[0])).mode & 0o777).toBe(0o600);
      expect(readdirSync(envState).filter((f) => f.startsWith('kubeconfig'))).toEqual([expect.stringMatching(/^kubeconfig\.reset-/)]);
      expect(readFileSync(join(envState, 'backups', 'kept', 'manifest.json'), 'utf8')).toBe('{}\n');

      // A second reset finds nothing to remove.
      const again = await block('check');
      expect(again.code, again.stdout + again.stderr).toBe(0);
    },
    LONG,
  );

  it(
    'a cold build on the same hosts succeeds afterwards, with a new token',
    async () => {
      const r = await block('rebuild');
      expect(r.code, r.stdout + r.stderr).toBe(0);
      expect(await voters()).toEqual(ALL_VOTERS);
      const aside = readdirSync(envState).find((f) => f.startsWith('cluster-token.json.reset-'))!;
      expect(JSON.parse(readFileSync(join(envState, 'cluster-token.json'), 'utf8')).secret).not.toBe(
        JSON.parse(readFileSync(join(envState, aside), 'utf8')).secret,
      );
    },
    LONG,
  );
});
