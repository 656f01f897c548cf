// Adding and removing nodes on ONE running cluster (runbooks/membership.md): a lab of 5 servers and 2 agents whose
// inventory first lists 3 servers and 1 agent. Cold build; the inventory extended to every host, a plain rerun
// adds them (the new servers join a live server of the cluster, one at a time, as voters; the new agent through
// the VIP) and a rerun changes nothing; a removal that would cost quorum at a step is refused with
// QUORUM_AT_RISK and one that leaves an even number of servers with SERVER_COUNT_EVEN, nothing changed; then one
// `--remove` of the founder, another server and an agent leaves 3 voters and 1 agent, the removed hosts without
// k3s, their Nodes, etcd members and node-password Secrets gone; with them deleted from the inventory a plain
// rerun changes nothing; last, a dead agent (powered off) is removed all the same, the operator told that its
// host was not wiped. No rebuild: every step runs on the cluster the one before left.
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { parse, stringify } from 'yaml';
import { beforeAll, expect, it } from 'vitest';
import { fault, hostExec } from '../../lab/api.ts';
import { describeAsRoot } from '../support/env.ts';
import { ensureLab, hosts } from '../support/lab.ts';
import { bootstrap, freshStateDir, k3sLeftOn, resetCluster, stopOf, voters, type BootstrapRun } from '../support/cluster.ts';
import { labInventory } from '../support/lab-inventory.ts';
import { validatedOrder, allPhases } from '../../phases/index.ts';
import { lastBuiltPhase } from '../../modes/compose.ts';

const LONG = 900_000;
const BUILT = ['--until', lastBuiltPhase(validatedOrder(allPhases()))!];
const SERVERS = ['k3s-lab-1', 'k3s-lab-2', 'k3s-lab-3', 'k3s-lab-4', 'k3s-lab-5'];
const AGENTS = ['k3s-lab-agent-1', 'k3s-lab-agent-2'];
/** The server the test reads the cluster through: one that stays. */
let SURVIVOR = 'k3s-lab-3';

/** The output of a run, kept for the runbook when BOOTSTRAP_CAPTURE_DIR names a folder. */
function keep(name: string, run: BootstrapRun): BootstrapRun {
  const dir = process.env.BOOTSTRAP_CAPTURE_DIR;
  if (dir) writeFileSync(join(dir, `${name}.txt`), `${run.stdout}${run.stderr}\n(exit ${run.code}, ${(run.ms / 1000).toFixed(1)} s)\n`);
  return run;
}
const changedNothing = (r: BootstrapRun) => expect(r.stdout, r.stdout + r.stderr).toMatch(/^\d+ ok, 0 changed/m);

describeAsRoot('adding and removing nodes (--remove) on a running cluster', () => {
  const stateDir = freshStateDir();
  let inventory: string;
  /** The inventory with these servers (the founder marked) and agents, in this order. */
  const listing = (servers: string[], agents: string[], founder: string) => {
    const inv = parse(readFileSync(inventory, 'utf8'));
    const all = hosts();
    const entry = (name: string) => ({ name, address: all.find((h) => h.name === name)!.address });
    inv.servers = servers.map((n) => ({ ...entry(n), ...(n === founder && { founder: true }) }));
    inv.agents = agents.map(entry);
    writeFileSync(inventory, stringify(inv));
  };
  const run = (args: string[]) => bootstrap(args, { stateDir, inventory });
  const nodes = async () => (await hostExec(SURVIVOR, "k3s kubectl get nodes -o jsonpath='{.items[*].metadata.name}'")).stdout.trim().split(/\s+/).sort();
  const readyAgents = async () =>
    (
      await hostExec(
        SURVIVOR,
        `k3s kubectl get nodes -o jsonpath='{range .items[*]}{.metadata.name}={.status.conditions[?(@.type=="Ready")].status}{"\\n"}{end}'`,
      )
    ).stdout
      .trim()
      .split('\n')
      .filter((l) => l.startsWith('k3s-lab-agent') && l.endsWith('=True'))
      .map((l) => l.split('=')[0])
      .sort();

  beforeAll(async () => {
    await ensureLab({ servers: 5, agents: 2 });
    await resetCluster();
    inventory = labInventory();
    listing(SERVERS.slice(0, 3), AGENTS.slice(0, 1), 'k3s-lab-1');
    const cold = keep('cold', await run(BUILT));
    expect(cold.code, cold.stdout + cold.stderr).toBe(0);
  }, LONG);

  it(
    'the inventory extended to 5 servers and 2 agents: a plain rerun adds them, the servers joining a live server, all voters',
    async () => {
      // The servers listed in another order: the first that holds a datastore and answers is k3s-lab-2, not the founder.
      listing(['k3s-lab-2', 'k3s-lab-1', 'k3s-lab-3', 'k3s-lab-4', 'k3s-lab-5'], AGENTS, 'k3s-lab-1');
      const check = keep('add-check', await run([...BUILT, '--check', '--json']));
      expect(check.code, check.stdout + check.stderr).toBe(2);
      const lab2 = hosts().find((h) => h.name === 'k3s-lab-2')!.address;
      // Shown in the plan: each new server's start says where it joins, one at a time, in inventory order.
      const starts = check.events
        .filter((e) => e.type === 'step-end' && e.phase === 'k3s-join' && e.step === 'service' && e.changes.length)
        .map((e) => [e.host, e.changes.map((c: any) => c.summary).join('; ')]);
      expect(starts).toEqual([
        ['k3s-lab-4', expect.stringContaining(`start k3s: it joins the cluster through https://${lab2}:6443`)],
        ['k3s-lab-5', expect.stringContaining(`start k3s: it joins the cluster through https://${lab2}:6443`)],
      ]);
      // The servers that hold a datastore keep their config: nothing of theirs would change.
      const touched = check.events.filter(
        (e) => e.type === 'step-end' && e.status === 'would-change' && ['k3s-lab-1', 'k3s-lab-2', 'k3s-lab-3'].includes(e.host),
      );
      expect(touched.map((e) => `${e.host} ${e.phase} ${e.step}`)).toEqual([]);

      const add = keep('add', await run(BUILT));
      expect(add.code, add.stdout + add.stderr).toBe(0);
      expect(await voters(SURVIVOR)).toEqual(Object.fromEntries(SERVERS.map((s) => [s, 'True'])));
      expect(await readyAgents()).toEqual(AGENTS);
      for (const name of ['k3s-lab-4', 'k3s-lab-5'])
        expect((await hostExec(name, "grep '^server:' /etc/rancher/k3s/config.yaml")).stdout.trim()).toBe(`server: https://${lab2}:6443`);
      const again = keep('add-rerun', await run(BUILT));
      expect(again.code, again.stdout + again.stderr).toBe(0);
      changedNothing(again);
    },
    LONG,
  );

  it(
    'refused before anything changes: a step that would lose quorum (QUORUM_AT_RISK), an even number of servers left (SERVER_COUNT_EVEN)',
    async () => {
      const before = await nodes();
      await hostExec('k3s-lab-4', 'systemctl stop k3s');
      await hostExec('k3s-lab-5', 'systemctl stop k3s');
      try {
        const refused = keep('refused-quorum', await run(['--remove', 'k3s-lab-3', '--allow-even', '--json']));
        expect(refused.code, refused.stdout + refused.stderr).toBe(1);
        expect(stopOf(refused)).toMatchObject({ cause: 'QUORUM_AT_RISK', host: 'k3s-lab-3' });
        expect(stopOf(refused).message).toMatch(/2 of the 5 etcd members would answer; 3 are needed/);
        expect(refused.events.filter((e) => e.type === 'step-end' || e.type === 'action-start')).toEqual([]);
      } finally {
        await hostExec('k3s-lab-4', 'systemctl start k3s');
        await hostExec('k3s-lab-5', 'systemctl start k3s');
      }
      expect(await nodes()).toEqual(before);
      const even = keep('refused-even', await run(['--remove', 'k3s-lab-4', '--check']));
      expect(even.code, even.stdout + even.stderr).toBe(1);
      expect(even.stderr).toMatch(/SERVER_COUNT_EVEN/);
      expect(even.stderr).toMatch(/--allow-even/);
      await expect.poll(() => voters(SURVIVOR), { timeout: 180_000, interval: 3_000 }).toEqual(Object.fromEntries(SERVERS.map((s) => [s, 'True'])));
    },
    LONG,
  );

  it(
    'one --remove of the founder, another server and an agent: 3 voters and 1 agent left, the removed hosts without k3s; then a plain rerun changes nothing',
    async () => {
      // The founder, the VIP holder (or k3s-lab-2 when the founder holds it: its lease is handed over either way)
      // and an agent.
      const holder = (await hostExec(SURVIVOR, "k3s kubectl get lease -n kube-system plndr-cp-lock -o jsonpath='{.spec.holderIdentity}'")).stdout.trim();
      const other = holder && holder !== 'k3s-lab-1' ? holder : 'k3s-lab-2';
      const REMOVED = ['k3s-lab-1', other, 'k3s-lab-agent-2'];
      const left = SERVERS.filter((s) => !REMOVED.includes(s));
      SURVIVOR = left[0];
      const arg = ['--remove', REMOVED.join(',')];
      const check = keep('remove-check', await run([...arg, '--check']));
      expect(check.code, check.stdout + check.stderr).toBe(2);
      expect(await nodes()).toEqual([...SERVERS, ...AGENTS].sort());

      const removal = keep('remove', await run([...arg, '--json']));
      expect(removal.code, removal.stdout + removal.stderr).toBe(0);
      // One at a time: the agent, then the other server, the founder last; each host stopped and wiped before its Node goes.
      const order = removal.events.filter((e) => e.type === 'step-start' && e.step === 'remove-node').map((e) => e.host);
      expect(order).toEqual(['k3s-lab-agent-2', other, 'k3s-lab-1']);
      const notes = removal.events.filter((e) => e.type === 'warning' && /delete it from/.test(e.message)).map((e) => e.host);
      expect(notes).toEqual(['k3s-lab-agent-2', other, 'k3s-lab-1']);
      // The VIP was handed over before its holder went.
      const handed = removal.events.filter((e) => e.type === 'check' && e.check === 'vip-handover').map((e) => e.host);
      expect(handed).toEqual([holder]);
      expect(left).toContain(
        (await hostExec(SURVIVOR, "k3s kubectl get lease -n kube-system plndr-cp-lock -o jsonpath='{.spec.holderIdentity}'")).stdout.trim(),
      );

      expect(await nodes()).toEqual([...left, 'k3s-lab-agent-1']);
      expect(await voters(SURVIVOR)).toEqual(Object.fromEntries(left.map((s) => [s, 'True'])));
      const members = JSON.parse((await hostExec(SURVIVOR, 'k3s kubectl get --raw /db/info')).stdout).members.map((m: any) =>
        m.name.replace(/-[0-9a-f]{8}$/, ''),
      );
      expect(members.sort()).toEqual(left);
      const secrets = (await hostExec(SURVIVOR, "k3s kubectl get secrets -n kube-system -o jsonpath='{.items[*].metadata.name}'")).stdout;
      for (const name of REMOVED) expect(secrets).not.toContain(`${name}.node-password.k3s`);
      for (const name of [...left, 'k3s-lab-agent-1']) expect(secrets).toContain(`${name}.node-password.k3s`);
      for (const name of REMOVED) expect(await k3sLeftOn(name), name).toEqual(['inactive', 'inactive']);

      listing(left, ['k3s-lab-agent-1'], left[0]);
      const after = keep('after-removal', await run(BUILT));
      expect(after.code, after.stdout + after.stderr).toBe(0);
      changedNothing(after);
    },
    LONG,
  );

  it(
    'a dead agent (powered off) removed: its Node and node-password Secret go through a server, the run says its k3s was not stopped or wiped, and a plain rerun without it changes nothing',
    async () => {
      const DEAD = 'k3s-lab-agent-1';
      const servers = (await nodes()).filter((n) => !n.startsWith('k3s-lab-agent'));
      await fault(DEAD, 'stop');
      try {
        const removal = keep('remove-dead', await run(['--remove', DEAD, '--json']));
        expect(removal.code, removal.stdout + removal.stderr).toBe(0);
        // The operator is told what could not be done on the host, and what to do if it comes back.
        const warned = removal.events.filter((e) => e.type === 'warning' && e.host === DEAD).map((e) => e.message);
        expect(warned).toContainEqual(
          expect.stringMatching(
            new RegExp(`^${DEAD} does not answer SSH: it is removed from the cluster through k3s-lab-\\d, but k3s on it is not stopped or wiped`),
          ),
        );
        expect(await nodes()).toEqual(servers);
        const secrets = (await hostExec(SURVIVOR, "k3s kubectl get secrets -n kube-system -o jsonpath='{.items[*].metadata.name}'")).stdout;
        expect(secrets).not.toContain(`${DEAD}.node-password.k3s`);
        listing(servers, [], servers[0]);
        const after = keep('after-dead-removal', await run(BUILT));
        expect(after.code, after.stdout + after.stderr).toBe(0);
        changedNothing(after);
      } finally {
        await fault(DEAD, 'start');
      }
    },
    LONG,
  );
});
