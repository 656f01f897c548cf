import { describe, expect, it } from 'vitest';
import { cli, cliProcess } from '../support/cli.ts';

const fixture = (name: string) => `test/fixtures/inventory/${name}.yaml`;

describe('bootstrap validate', () => {
  it('answers ok with exit 0 for the operator environments', async () => {
    for (const env of ['prod', 'dev']) {
      const r = await cli(['validate', env, '--json']);
      expect(JSON.parse(r.stdout)).toEqual({ ok: true, causes: [] });
      expect(r.code).toBe(0);
    }
  });

  it('lists every broken contract with id, message and path, exit 65', async () => {
    const r = await cli(['validate', '--inventory', fixture('many-violations'), '--json']);
    expect(r.code).toBe(65);
    const json = JSON.parse(r.stdout);
    expect(json.ok).toBe(false);
    expect(json.causes.length).toBeGreaterThan(3);
    for (const c of json.causes) expect(Object.keys(c).sort()).toEqual(['id', 'message', 'path']);
  });

  it.each([
    ['vip-is-node-address', 'VIP_IS_NODE_ADDRESS', 'controlPlane.vip'],
    ['founder-two', 'FOUNDER_NOT_UNIQUE', undefined],
    ['server-count-even', 'SERVER_COUNT_EVEN', undefined],
    ['placeholders', 'PLACEHOLDER_VALUE', undefined],
    ['unknown-key', 'INVENTORY_SCHEMA', undefined],
    ['cidr-overlap', 'CIDR_OVERLAP', undefined],
  ])('%s → %s', async (name, id, path) => {
    const r = await cli(['validate', '--inventory', fixture(name), '--json']);
    expect(r.code).toBe(65);
    const causes = JSON.parse(r.stdout).causes;
    expect(causes.map((c: { id: string }) => c.id)).toContain(id);
    if (path) expect(causes.find((c: { id: string }) => c.id === id).path).toBe(path);
  });

  it('prints violations for people without --json', async () => {
    const r = await cli(['validate', '--inventory', fixture('vip-is-node-address')]);
    expect(r.code).toBe(65);
    expect(r.stderr).toMatch(/VIP_IS_NODE_ADDRESS +controlPlane\.vip/);
  });
});

describe('the command line', () => {
  it('refuses unknown flags and phases with exit 64 and the usage', async () => {
    const r = await cli(['prod', '--chek']);
    expect(r.code).toBe(64);
    expect(r.stderr).toContain('usage:');
    const p = await cli(['prod', '--only', 'k3s']);
    expect(p.code).toBe(64);
    expect(p.stderr).toMatch(/--only k3s: no such phase/);
  });

  it('refuses a run whose inventory is invalid before connecting (exit 65)', async () => {
    const r = await cli(['--inventory', fixture('founder-none')]);
    expect(r.code).toBe(65);
    expect(r.stderr).toContain('FOUNDER_NOT_UNIQUE');
  });

  it('names missing artifacts before any connection (exit 1)', async () => {
    const r = await cli(['prod', '--until', 'k3s-join']);
    expect(r.code).toBe(1);
    expect(r.stderr).toMatch(/ARTIFACT_MISSING/);
    expect(r.stderr).toMatch(/artifacts\/k3s/);
  });

  it('--json prints a stopped object per cause for stops before any session: artifacts, inventory, usage', async () => {
    const lines = (stdout: string) =>
      stdout
        .trim()
        .split('\n')
        .map((l) => JSON.parse(l));
    const artifacts = await cli(['prod', '--until', 'k3s-join', '--json']);
    expect(artifacts.code).toBe(1);
    const stops = lines(artifacts.stdout);
    expect(stops.length).toBeGreaterThan(0);
    for (const s of stops) expect(s).toMatchObject({ type: 'stopped', error: { cause: 'ARTIFACT_MISSING', remedy: expect.any(String) } });
    const invalid = await cli(['--inventory', fixture('founder-none'), '--json']);
    expect(invalid.code).toBe(65);
    expect(lines(invalid.stdout).map((s) => s.error.cause)).toContain('FOUNDER_NOT_UNIQUE');
    const usage = await cli(['prod', '--chek', '--json']);
    expect(usage.code).toBe(64);
    expect(lines(usage.stdout)).toEqual([{ type: 'stopped', error: { message: expect.stringContaining('--chek'), exitCode: 64 } }]);
  });

  it('plans the DAG per host without connecting', async () => {
    const r = await cli(['plan', 'prod']);
    expect(r.code).toBe(0);
    expect(r.stdout).toMatch(/^k3s-join +\(after k3s-founder\)/m);
    expect(r.stdout).toMatch(/hosts: k3s-prod-2, k3s-prod-3; one host at a time/);
  });

  it('plan --json prints one JSON object for a refused inventory too (exit 65)', async () => {
    const r = await cli(['plan', '--inventory', fixture('founder-none'), '--json']);
    expect(r.code).toBe(65);
    const json = JSON.parse(r.stdout);
    expect(json.ok).toBe(false);
    expect(json.causes.map((c: { id: string }) => c.id)).toContain('FOUNDER_NOT_UNIQUE');
    const missing = await cli(['plan', '--inventory', fixture('no-such-file'), '--json']);
    expect(missing.code).toBe(65);
    expect(JSON.parse(missing.stdout).causes[0].message).toMatch(/does not exist/);
  });

  it('prints the catalogue of causes', async () => {
    const r = await cli(['causes', '--json']);
    const ids = JSON.parse(r.stdout).map((c: { id: string }) => c.id);
    expect(ids).toEqual(expect.arrayContaining(['HOST_KEY_MISMATCH', 'EXISTING_CLUSTER_FOUND', 'VIP_IS_NODE_ADDRESS']));
  });

  it('works as `npx bootstrap` after npm ci', () => {
    const r = cliProcess(['validate', '--inventory', 'inventory/prod.yaml', '--json']);
    expect(r.code).toBe(0);
    expect(JSON.parse(r.stdout)).toEqual({ ok: true, causes: [] });
    // npx resolves the package and starts a process: seconds on a loaded CI machine (startup speed is the bench's).
  }, 30_000);
});
