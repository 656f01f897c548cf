// The founder's token and kubeconfig as local changes of plans: a new environment's token is kept in the
// state folder by the config step before the config that carries it; once the API serves, the full token
// and the kubeconfig (dialling the VIP) are kept, and only when the state folder's copy differs.
import { mkdirSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { k3sFounder } from '../../phases/k3s-founder.ts';
import { serverRefs } from '../../src/inventory/hosts.ts';
import { clusterAccess } from '../../phases/k3s/gates.ts';
import { kubeconfigPath } from '../../src/k3s/kubeconfig-file.ts';
import { tokenPath } from '../../src/k3s/token.ts';
import type { RunContext } from '../../src/engine/context.ts';
import { inventoryContext } from '../support/engine-fixture.ts';
import type { LocalChange } from '../../src/engine/changes.ts';
import { loadInventory } from '../../src/inventory/index.ts';

const K3S_YAML = 'apiVersion: v1\nclusters:\n- cluster:\n    server: https://127.0.0.1:6443\n  name: default\nkind: Config\n';
const FULL = `K10${'ab'.repeat(32)}::server:s3cret`;

async function setup(check = false) {
  const inventory = await loadInventory('inventory/prod.yaml');
  const stateDir = mkdtempSync(join(tmpdir(), 'cluster-access-'));
  return { ctx: inventoryContext(inventory, { stateDir, check }), stateDir, founder: serverRefs(inventory)[0] };
}

const ok = (stdout: string) => ({ stdout, stderr: '', code: 0 });

describe('the founder config step keeps a new token first', () => {
  it('a state folder without a token: the token file (secret, 0600) is written before the config; in check mode too, as a plan', async () => {
    for (const check of [false, true]) {
      const { ctx, stateDir, founder } = await setup(check);
      const config = k3sFounder.steps.find((s) => s.id === 'config')!;
      const local = await config.local!(founder, ctx);
      const plan = config.plan({ host: founder, ctx, local, probe: { file: { stdout: '', stderr: '', code: 1 }, datastore: ok(''), joinLine: ok('') } });
      expect(plan.changes.map((c) => c.kind)).toEqual(['local', 'file']);
      expect(plan.changes[0]).toMatchObject({ kind: 'local', path: tokenPath(stateDir), current: null, mode: '0600', secret: true });
    }
  });

  it('a state folder with its token: only the config', async () => {
    const { ctx, stateDir, founder } = await setup();
    writeFileSync(tokenPath(stateDir), JSON.stringify({ secret: 's3cret' }));
    const config = k3sFounder.steps.find((s) => s.id === 'config')!;
    const local = await config.local!(founder, ctx);
    const plan = config.plan({ host: founder, ctx, local, probe: { file: { stdout: '', stderr: '', code: 1 }, datastore: ok(''), joinLine: ok('') } });
    expect(plan.changes.map((c) => c.kind)).toEqual(['file']);
  });
});

describe('cluster access after the founder gate', () => {
  it('plans the full token and the kubeconfig dialling the VIP, then nothing once the state folder has them', async () => {
    const { ctx, stateDir, founder } = await setup();
    writeFileSync(tokenPath(stateDir), JSON.stringify({ secret: 's3cret' }));
    const probe = { token: ok(`${FULL}\n`), kubeconfig: ok(K3S_YAML) };
    const plan = clusterAccess.plan({ host: founder, ctx, probe, local: await clusterAccess.local!(founder, ctx) });
    const [token, kubeconfig] = plan.changes as LocalChange[];
    expect(plan.changes).toHaveLength(2);
    expect(token).toMatchObject({ path: tokenPath(stateDir), secret: true, mode: '0600' });
    expect(JSON.parse(token.content)).toEqual({ secret: 's3cret', full: FULL });
    expect(kubeconfig).toMatchObject({ path: kubeconfigPath(stateDir), secret: true, mode: '0600', current: null });
    expect(parse(kubeconfig.content).clusters[0].cluster.server).toBe(ctx.inventory.derived.apiUrl);
    // The state folder as the engine leaves it: a rerun plans nothing.
    writeFileSync(tokenPath(stateDir), token.content);
    mkdirSync(stateDir, { recursive: true });
    writeFileSync(kubeconfigPath(stateDir), kubeconfig.content, { mode: 0o600 });
    expect(clusterAccess.plan({ host: founder, ctx, probe, local: await clusterAccess.local!(founder, ctx) }).changes).toEqual([]);
  });

  it("a token of another cluster is not kept; nothing is planned while the founder's files cannot be read", async () => {
    const { ctx, stateDir, founder } = await setup();
    writeFileSync(tokenPath(stateDir), JSON.stringify({ secret: 'other' }));
    const refused = { stdout: '', stderr: 'No such file or directory', code: 1 };
    expect(
      clusterAccess.plan({ host: founder, ctx, probe: { token: ok(FULL), kubeconfig: refused }, local: await clusterAccess.local!(founder, ctx) }).changes,
    ).toEqual([]);
    expect(
      clusterAccess.plan({ host: founder, ctx, probe: { token: refused, kubeconfig: refused }, local: await clusterAccess.local!(founder, ctx) }).changes,
    ).toEqual([]);
  });

  it('reads the token and the kubeconfig by secret probes: the run log never holds them', () => {
    const probes = clusterAccess.probe!(
      serverRefs({ derived: { servers: [{ name: 'a', address: '' }], founder: { name: 'a' } } } as never)[0],
      {} as RunContext,
    );
    expect(Object.values(probes).map((p) => p.secret)).toEqual([true, true]);
  });
});

describe("the kubeconfig of another server's admin credentials", () => {
  it('is kept while its certificate is far from its end (every server issues its own), replaced when near it', async () => {
    const { generateKeyPairSync } = await import('node:crypto');
    const { execFileSync } = await import('node:child_process');
    const { ctx, stateDir, founder } = await setup();
    writeFileSync(tokenPath(stateDir), JSON.stringify({ secret: 's3cret', full: FULL }));
    const dir = mkdtempSync(join(tmpdir(), 'kubeconfig-cert-'));
    const certFor = (days: number) => {
      const key = generateKeyPairSync('ec', { namedCurve: 'prime256v1' }).privateKey.export({ type: 'pkcs8', format: 'pem' }) as string;
      writeFileSync(join(dir, 'k.pem'), key);
      execFileSync('openssl', ['req', '-x509', '-key', join(dir, 'k.pem'), '-subj', '/CN=system:admin', '-days', String(days), '-out', join(dir, 'c.pem')], {
        stdio: 'ignore',
      });
      return { cert: Buffer.from(readFileSync(join(dir, 'c.pem'))).toString('base64'), key: Buffer.from(key).toString('base64') };
    };
    const yamlWith = (c: { cert: string; key: string }) =>
      `${K3S_YAML}users:\n- name: default\n  user:\n    client-certificate-data: ${c.cert}\n    client-key-data: ${c.key}\n`;
    const server1 = certFor(365);
    const first = clusterAccess.plan({
      host: founder,
      ctx,
      probe: { token: ok(FULL), kubeconfig: ok(yamlWith(server1)) },
      local: await clusterAccess.local!(founder, ctx),
    });
    writeFileSync(kubeconfigPath(stateDir), (first.changes[0] as LocalChange).content, { mode: 0o600 });
    const again = async (seen: string) =>
      clusterAccess.plan({ host: founder, ctx, probe: { token: ok(FULL), kubeconfig: ok(seen) }, local: await clusterAccess.local!(founder, ctx) }).changes
        .length;
    // Another server's credentials, a year left on the copy: kept.
    expect(await again(yamlWith(certFor(365)))).toBe(0);
    // A copy whose certificate ends within 30 days: replaced.
    writeFileSync(
      kubeconfigPath(stateDir),
      (
        clusterAccess.plan({
          host: founder,
          ctx,
          probe: { token: ok(FULL), kubeconfig: ok(yamlWith(certFor(30))) },
          local: { token: { secret: 's3cret', full: FULL }, kubeconfig: null },
        }).changes[0] as LocalChange
      ).content,
      { mode: 0o600 },
    );
    expect(await again(yamlWith(server1))).toBe(1);
  });
});
