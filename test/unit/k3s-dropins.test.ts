// Drop-ins that would make k3s run with something else than bootstrap writes (phases/k3s/dropins.ts): the probes
// run by a real sh, sed and awk on folders laid out as a host might have them, what they make of the names, and
// the config step of every k3s phase refusing to write while one replaces what it renders.
import { execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { configDropinsProbe, configOverrides, dropinsOf, unitDropinsProbe, unitOverrides } from '../../phases/k3s/dropins.ts';
import { k3sFounder } from '../../phases/k3s-founder.ts';
import { agents } from '../../phases/agents.ts';
import type { RunContext } from '../../src/engine/context.ts';
import type { ProbeCommand } from '../../src/engine/phase.ts';
import { inventoryContext } from '../support/engine-fixture.ts';
import { loadInventory } from '../../src/inventory/index.ts';
import { agentRefs, serverRefs } from '../../src/inventory/hosts.ts';
import { tokenPath } from '../../src/k3s/token.ts';

const run = (p: ProbeCommand) => execFileSync('sh', ['-c', p.command], { encoding: 'utf8' });
const tmp = () => mkdtempSync(join(tmpdir(), 'dropins-'));

describe('the config drop-in probe, run by sh on a folder', () => {
  it('names each *.yaml / *.yml file and its top-level keys only: no values, comments, nested keys, other files or folders', () => {
    const dir = join(tmp(), 'config.yaml.d');
    mkdirSync(join(dir, 'old.yaml'), { recursive: true });
    writeFileSync(join(dir, '10-cloud.YML'), 'server: https://10.0.0.1:6443\n');
    writeFileSync(
      join(dir, '50-site.yaml'),
      '# cluster-cidr: commented out\n"tls-san":\n  - k8s.example\n  - nested-key: no\ntls-san+: [x]\nt: s3cret-token-value\n---\nnode-label+:\n  - "a: b"\nkubelet-arg :\r\n',
    );
    writeFileSync(join(dir, 'notes.txt'), 'cluster-cidr: 10.9.0.0/16\n');
    const out = run(configDropinsProbe(dir));
    expect(out).not.toContain('s3cret');
    // The .yml ones after the .yaml ones (the order does not matter: any one that replaces is named).
    expect(dropinsOf(out)).toEqual([
      { file: join(dir, '50-site.yaml'), lines: ['tls-san', 'tls-san+', 't', 'node-label+', 'kubelet-arg'] },
      { file: join(dir, '10-cloud.YML'), lines: ['server'] },
    ]);
  });

  it('no folder, or an empty one: nothing, and success', () => {
    const root = tmp();
    expect(run(configDropinsProbe(join(root, 'config.yaml.d')))).toBe('');
    mkdirSync(join(root, 'config.yaml.d'));
    expect(run(configDropinsProbe(join(root, 'config.yaml.d')))).toBe('');
  });
});

describe('the unit drop-in probe, run by sh and awk on the systemd folders', () => {
  it("names each *.conf of the unit's .d folders with its ExecStart and the variables it sets, never their values", () => {
    const [etc, usr] = [tmp(), tmp()];
    mkdirSync(join(etc, 'k3s.service.d'));
    mkdirSync(join(usr, 'k3s.service.d'));
    const envFile = join(etc, 'k3s-extra.env');
    writeFileSync(envFile, '# proxy\nexport HTTPS_PROXY=http://proxy:3128\nK3S_CONFIG_FILE=/etc/other.yaml\nK3S_TOKEN="s3cret"\n');
    writeFileSync(
      join(etc, 'k3s.service.d', '10-site.conf'),
      `[Service]\nExecStart=\nExecStart=/usr/local/bin/k3s server --cluster-cidr=10.99.0.0/16\nEnvironment="HTTP_PROXY=http://proxy:3128" NO_PROXY=10.0.0.0/8\nEnvironmentFile=-${envFile}\n`,
    );
    writeFileSync(join(etc, 'k3s.service.d', 'notes.txt'), 'ExecStart=/bin/false\n');
    writeFileSync(join(usr, 'k3s.service.d', '50-limits.conf'), '[Service]\nLimitNOFILE=65536\nEnvironment=K3S_TOKEN=s3cret\n');
    const out = run(unitDropinsProbe('k3s.service', [etc, join(tmp(), 'absent'), usr]));
    expect(out).not.toContain('s3cret');
    expect(out).not.toContain('proxy:3128');
    expect(dropinsOf(out)).toEqual([
      {
        file: join(etc, 'k3s.service.d', '10-site.conf'),
        lines: ['ExecStart', 'ExecStart', 'Environment HTTP_PROXY NO_PROXY', `EnvironmentFile ${envFile} HTTPS_PROXY K3S_CONFIG_FILE K3S_TOKEN`],
      },
      { file: join(usr, 'k3s.service.d', '50-limits.conf'), lines: ['Environment K3S_TOKEN'] },
    ]);
    expect(run(unitDropinsProbe('k3s-agent.service', [etc, usr]))).toBe('');
  });
});

describe('what replaces what bootstrap renders', () => {
  const server = 'cluster-init: true\ntoken: x\nnode-ip: 10.0.0.1\ntls-san: [10.0.0.9]\ncluster-cidr: 10.42.0.0/16\n';
  const agent = 'server: https://10.0.0.9:6443\ntoken: x\nnode-ip: 10.0.0.5\n';
  const d = (...lines: string[]) => [{ file: '/etc/rancher/k3s/config.yaml.d/50-x.yaml', lines }];

  it('a rendered key replaced, also by its one-letter name; appends and keys bootstrap does not render pass', () => {
    expect(configOverrides(server, d('cluster-cidr', 'tls-san+', 'node-label', 'kubelet-arg'), 'server').map((o) => o.sets)).toEqual(['cluster-cidr']);
    expect(configOverrides(agent, d('t', 'i', 'node-label+'), 'agent')).toEqual([
      { file: '/etc/rancher/k3s/config.yaml.d/50-x.yaml', sets: 't', replaces: 'token in /etc/rancher/k3s/config.yaml' },
      { file: '/etc/rancher/k3s/config.yaml.d/50-x.yaml', sets: 'i', replaces: 'node-ip in /etc/rancher/k3s/config.yaml' },
    ]);
  });

  it("how a server joins is one setting: `server:` on the founder (which renders cluster-init) replaces it; not on an agent's", () => {
    expect(configOverrides(server, d('server'), 'server')).toMatchObject([{ sets: 'server', replaces: 'server in /etc/rancher/k3s/config.yaml' }]);
    expect(configOverrides(agent, d('cluster-init'), 'agent')).toEqual([]);
  });

  it("a unit drop-in's ExecStart, and K3S_CONFIG_FILE however it is set; other variables and directives pass", () => {
    const unit = '/etc/systemd/system/k3s.service';
    const f = '/etc/systemd/system/k3s.service.d/10-site.conf';
    expect(unitOverrides(unit, [{ file: f, lines: ['ExecStart', 'Environment HTTP_PROXY K3S_TOKEN'] }])).toEqual([
      { file: f, sets: 'ExecStart', replaces: `the command ${unit} runs (its flags win over /etc/rancher/k3s/config.yaml)` },
    ]);
    expect(unitOverrides(unit, [{ file: f, lines: ['EnvironmentFile /etc/k3s.env HTTPS_PROXY K3S_CONFIG_FILE'] }])).toEqual([
      { file: `${f} (EnvironmentFile /etc/k3s.env)`, sets: 'K3S_CONFIG_FILE', replaces: '/etc/rancher/k3s/config.yaml as the file k3s reads' },
    ]);
    expect(unitOverrides(unit, [{ file: f, lines: ['Environment K3S_CONFIG_FILE'] }])).toHaveLength(1);
    expect(unitOverrides(unit, [{ file: f, lines: ['Environment HTTP_PROXY NO_PROXY'] }])).toEqual([]);
  });
});

async function context(check: boolean, file = 'inventory/prod.yaml'): Promise<RunContext> {
  const stateDir = mkdtempSync(join(tmpdir(), 'dropins-state-'));
  writeFileSync(tokenPath(stateDir), JSON.stringify({ secret: 's3cret', full: `K10${'ab'.repeat(32)}::server:s3cret` }));
  return inventoryContext(await loadInventory(file), { stateDir, check });
}

const ok = (stdout: string) => ({ stdout, stderr: '', code: 0 });
const absent = { stdout: '', stderr: '', code: 1 };

describe('the config step of the k3s phases', () => {
  it('a drop-in replacing the cluster CIDR on the founder: K3S_DROPIN_OVERRIDES, nothing written, in check mode too', async () => {
    for (const check of [false, true]) {
      const ctx = await context(check);
      const founder = serverRefs(ctx.inventory)[0];
      const config = k3sFounder.steps.find((s) => s.id === 'config')!;
      const local = await config.local!(founder, ctx);
      const seen = { file: absent, datastore: ok(''), joinLine: ok(''), unitDropins: ok('') };
      const configDropins = ok('== /etc/rancher/k3s/config.yaml.d/90-image.yaml\ncluster-cidr\nnode-label+\n');
      const plan = config.plan({ host: founder, ctx, local, probe: { ...seen, configDropins } });
      expect(plan.changes).toEqual([]);
      expect(plan.stops).toHaveLength(1);
      expect(plan.stops![0]).toMatchObject({ causeId: 'K3S_DROPIN_OVERRIDES', host: founder.name });
      expect(plan.stops![0].message).toBe(
        `${founder.name}: /etc/rancher/k3s/config.yaml.d/90-image.yaml sets cluster-cidr, which replaces cluster-cidr in /etc/rancher/k3s/config.yaml`,
      );
      // Without it, the step writes the config as ever.
      const clean = config.plan({ host: founder, ctx, local, probe: { ...seen, configDropins: ok('') } });
      expect(clean.stops ?? []).toEqual([]);
      expect(clean.changes.map((c) => c.kind)).toContain('file');
    }
  });

  it("an agent: its unit's drop-in replacing ExecStart and a config drop-in naming the server (`s:`), both said; the probes asked with the step's own", async () => {
    const ctx = await context(false, 'test/fixtures/inventory/valid.yaml');
    const agent = agentRefs(ctx.inventory)[0];
    const config = agents.steps.find((s) => s.id === 'config')!;
    const probes = config.probe!(agent, ctx);
    expect(probes.configDropins).toEqual(configDropinsProbe());
    expect(probes.unitDropins).toEqual(unitDropinsProbe('k3s-agent.service'));
    const local = await config.local!(agent, ctx);
    const plan = config.plan({
      host: agent,
      ctx,
      local,
      probe: {
        file: absent,
        configDropins: ok('== /etc/rancher/k3s/config.yaml.d/10-a.yml\ns\n'),
        unitDropins: ok('== /etc/systemd/system/k3s-agent.service.d/override.conf\nExecStart\nExecStart\n'),
      },
    });
    expect(plan.stops![0]).toMatchObject({ causeId: 'K3S_DROPIN_OVERRIDES', host: agent.name });
    expect(plan.stops![0].message).toMatch(/10-a\.yml sets s \(= server\), which replaces server in \/etc\/rancher\/k3s\/config\.yaml \(and 1 more\)$/);
    expect(plan.stops![0].evidence.seen).toContain(
      '/etc/systemd/system/k3s-agent.service.d/override.conf sets ExecStart, which replaces the command /etc/systemd/system/k3s-agent.service runs',
    );
  });
});
