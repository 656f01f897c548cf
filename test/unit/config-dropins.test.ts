// k3s config drop-ins (/etc/rancher/k3s/config.yaml.d): the probe run by a real sh and sed on a folder laid out
// as a host might have it, what it makes of the keys, and the config step of every k3s phase refusing to
// write while a drop-in replaces what it renders.
import { execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { dropinKeysProbe, dropinsOf, overridesOf } from '../../phases/k3s/config-dropins.ts';
import { k3sFounder } from '../../phases/k3s-founder.ts';
import { agents } from '../../phases/agents.ts';
import type { RunContext } from '../../src/engine/context.ts';
import { Facts } from '../../src/engine/facts.ts';
import { systemClock } from '../../src/engine/clock.ts';
import { loadInventory } from '../../src/inventory/index.ts';
import { agentRefs, serverRefs, topologyOf } from '../../src/inventory/hosts.ts';
import { tokenPath } from '../../src/k3s/token.ts';

const probeOn = (dir: string) => execFileSync('sh', ['-c', dropinKeysProbe(dir).command], { encoding: 'utf8' });

describe('the drop-in probe, run by sh on a folder', () => {
  it('names each *.yaml / *.yml file and its top-level keys only: no values, comments, nested keys, other files or folders', () => {
    const dir = join(mkdtempSync(join(tmpdir(), 'dropins-')), 'config.yaml.d');
    mkdirSync(join(dir, 'old.yaml'), { recursive: true });
    writeFileSync(join(dir, '10-cloud.YML'), 'server: https://10.0.0.1:6443\n');
    writeFileSync(
      join(dir, '50-site.yaml'),
      '# cluster-cidr: commented out\n"tls-san":\n  - k8s.example\n  - nested-key: no\ntls-san+: [x]\nt: s3cret-token-value\n---\nnode-label+:\n  - "a: b"\nkubelet-arg :\r\n',
    );
    writeFileSync(join(dir, 'notes.txt'), 'cluster-cidr: 10.9.0.0/16\n');
    const out = probeOn(dir);
    expect(out).not.toContain('s3cret');
    expect(dropinsOf(out)).toEqual([
      { file: join(dir, '10-cloud.YML'), keys: ['server'] },
      { file: join(dir, '50-site.yaml'), keys: ['tls-san', 'tls-san+', 't', 'node-label+', 'kubelet-arg'] },
    ]);
  });

  it('no folder, or an empty one: nothing, and success', () => {
    const root = mkdtempSync(join(tmpdir(), 'dropins-'));
    expect(probeOn(join(root, 'config.yaml.d'))).toBe('');
    mkdirSync(join(root, 'config.yaml.d'));
    expect(probeOn(join(root, 'config.yaml.d'))).toBe('');
  });
});

describe('which drop-in keys replace what bootstrap renders', () => {
  const server = 'cluster-init: true\ntoken: x\nnode-ip: 10.0.0.1\ntls-san: [10.0.0.9]\ncluster-cidr: 10.42.0.0/16\n';
  const agent = 'server: https://10.0.0.9:6443\ntoken: x\nnode-ip: 10.0.0.5\n';
  const d = (...keys: string[]) => [{ file: '/etc/rancher/k3s/config.yaml.d/50-x.yaml', keys }];

  it('a rendered key replaced, also by its one-letter name; appends and keys bootstrap does not render pass', () => {
    expect(overridesOf(server, d('cluster-cidr', 'tls-san+', 'node-label', 'kubelet-arg'), 'server').map((o) => o.key)).toEqual(['cluster-cidr']);
    expect(overridesOf(agent, d('t', 'i', 'node-label+'), 'agent')).toEqual([
      { file: '/etc/rancher/k3s/config.yaml.d/50-x.yaml', key: 't', replaces: 'token' },
      { file: '/etc/rancher/k3s/config.yaml.d/50-x.yaml', key: 'i', replaces: 'node-ip' },
    ]);
  });

  it("how a server joins is one setting: `server:` on the founder (which renders cluster-init) replaces it; not on an agent's", () => {
    expect(overridesOf(server, d('server'), 'server')).toMatchObject([{ key: 'server', replaces: 'server' }]);
    expect(overridesOf(agent, d('cluster-init'), 'agent')).toEqual([]);
  });
});

async function context(check: boolean, file = 'inventory/prod.yaml'): Promise<RunContext> {
  const inventory = await loadInventory(file);
  const stateDir = mkdtempSync(join(tmpdir(), 'dropins-state-'));
  mkdirSync(stateDir, { recursive: true });
  writeFileSync(tokenPath(stateDir), JSON.stringify({ secret: 's3cret', full: `K10${'ab'.repeat(32)}::server:s3cret` }));
  return {
    env: 'prod',
    check,
    inventory,
    remote: () => undefined as never,
    clock: systemClock,
    emit: () => undefined,
    signal: new AbortController().signal,
    stateDir,
    facts: new Facts(),
    once: (_f, compute) => compute(),
    redact: () => undefined,
    topology: topologyOf(inventory),
  };
}

const ok = (stdout: string) => ({ stdout, stderr: '', code: 0 });
const absent = { stdout: '', stderr: '', code: 1 };

describe('the config step of the k3s phases', () => {
  it('a drop-in replacing the cluster CIDR on the founder: K3S_CONFIG_DROPIN_OVERRIDES, nothing written, in check mode too', async () => {
    for (const check of [false, true]) {
      const ctx = await context(check);
      const founder = serverRefs(ctx.inventory)[0];
      const config = k3sFounder.steps.find((s) => s.id === 'config')!;
      const local = await config.local!(founder, ctx);
      const dropins = ok('== /etc/rancher/k3s/config.yaml.d/90-image.yaml\ncluster-cidr\nnode-label+\n');
      const plan = config.plan({ host: founder, ctx, local, probe: { file: absent, datastore: ok(''), joinLine: ok(''), dropins } });
      expect(plan.changes).toEqual([]);
      expect(plan.stops).toHaveLength(1);
      expect(plan.stops![0]).toMatchObject({ causeId: 'K3S_CONFIG_DROPIN_OVERRIDES', host: founder.name });
      expect(plan.stops![0].message).toBe(
        `${founder.name}: /etc/rancher/k3s/config.yaml.d/90-image.yaml sets cluster-cidr, which replaces what bootstrap writes in /etc/rancher/k3s/config.yaml`,
      );
      // Without it, the step writes the config as ever.
      const clean = config.plan({ host: founder, ctx, local, probe: { file: absent, datastore: ok(''), joinLine: ok(''), dropins: ok('') } });
      expect(clean.stops ?? []).toEqual([]);
      expect(clean.changes.map((c) => c.kind)).toContain('file');
    }
  });

  it("an agent's drop-in naming the server it dials (`s:`) stops it; the probe is asked with the step's own", async () => {
    const ctx = await context(false, 'test/fixtures/inventory/valid.yaml');
    const agent = agentRefs(ctx.inventory)[0];
    const config = agents.steps.find((s) => s.id === 'config')!;
    expect(config.probe!(agent, ctx).dropins).toEqual(dropinKeysProbe());
    const local = await config.local!(agent, ctx);
    const plan = config.plan({ host: agent, ctx, local, probe: { file: absent, dropins: ok('== /etc/rancher/k3s/config.yaml.d/10-a.yml\ns\n') } });
    expect(plan.stops![0]).toMatchObject({ causeId: 'K3S_CONFIG_DROPIN_OVERRIDES', host: agent.name });
    expect(plan.stops![0].evidence.seen).toContain('10-a.yml sets s (= server)');
  });
});
