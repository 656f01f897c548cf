// `bootstrap kubeconfig <env>`: the state folder's admin kubeconfig said where it is, copied, or merged
// into the operator's kubeconfig under a context; another cluster's entries of that name are refused.
import { mkdirSync, mkdtempSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parse, stringify } from 'yaml';
import { describe, expect, it } from 'vitest';
import { parseCommand } from '../../cli/args.ts';
import { mergeKubeconfig } from '../../src/kube/kubeconfig-merge.ts';
import { cli } from '../support/cli.ts';

/** An admin kubeconfig as k3s writes it (names "default"), the server set to the VIP. */
const admin = (ca: string, server = 'https://10.0.0.9:6443') =>
  stringify({
    apiVersion: 'v1',
    kind: 'Config',
    clusters: [{ name: 'default', cluster: { server, 'certificate-authority-data': ca } }],
    users: [{ name: 'default', user: { 'client-certificate-data': 'Q0VSVA==', 'client-key-data': 'S0VZ' } }],
    contexts: [{ name: 'default', context: { cluster: 'default', user: 'default' } }],
    'current-context': 'default',
  });

const other = stringify({
  apiVersion: 'v1',
  kind: 'Config',
  clusters: [{ name: 'staging', cluster: { server: 'https://192.0.2.1:6443', 'certificate-authority-data': 'T1RIRVI=' } }],
  users: [{ name: 'staging', user: { token: 'abc' } }],
  contexts: [{ name: 'staging', context: { cluster: 'staging', user: 'staging' } }],
  'current-context': 'staging',
});

describe('merging the admin kubeconfig', () => {
  it('adds a cluster, user and context of the name beside what is there, and keeps the current context', () => {
    const r = mergeKubeconfig(other, admin('Q0Ex'), 'prod');
    expect(r.ok && r.replaced).toBe(false);
    const doc = parse(r.ok ? r.text : '');
    expect(doc.contexts.map((c: any) => c.name)).toEqual(['staging', 'prod']);
    expect(doc.contexts[1].context).toEqual({ cluster: 'prod', user: 'prod' });
    expect(doc.clusters[1]).toEqual({ name: 'prod', cluster: { server: 'https://10.0.0.9:6443', 'certificate-authority-data': 'Q0Ex' } });
    expect(doc.users[0]).toEqual({ name: 'staging', user: { token: 'abc' } });
    expect(doc['current-context']).toBe('staging');
  });

  it('replaces its own entries (same CA) and makes a new file with the context current', () => {
    const first = mergeKubeconfig(undefined, admin('Q0Ex', 'https://10.0.0.9:6443'), 'prod');
    expect(first.ok && first.currentContextSet).toBe(true);
    const again = mergeKubeconfig(first.ok ? first.text : '', admin('Q0Ex', 'https://10.0.0.19:6443'), 'prod');
    expect(again.ok && again.replaced).toBe(true);
    const doc = parse(again.ok ? again.text : '');
    expect(doc.clusters).toHaveLength(1);
    expect(doc.clusters[0].cluster.server).toBe('https://10.0.0.19:6443');
  });

  it("refuses a name that is another cluster's, and a file that is no kubeconfig", () => {
    expect(mergeKubeconfig(other, admin('Q0Ex'), 'staging')).toEqual({
      ok: false,
      seen: 'context "staging" there points at cluster "staging" (https://192.0.2.1:6443), whose CA is not this cluster\'s',
    });
    const userOnly = stringify({ users: [{ name: 'prod', user: { token: 'x' } }] });
    expect(mergeKubeconfig(userOnly, admin('Q0Ex'), 'prod')).toMatchObject({
      ok: false,
      seen: expect.stringMatching(/user "prod" there belongs to no context/),
    });
    expect(mergeKubeconfig('- a\n- b\n', admin('Q0Ex'), 'prod')).toMatchObject({ ok: false, seen: expect.stringMatching(/not a YAML mapping/) });
    expect(mergeKubeconfig('clusters: {}\n', admin('Q0Ex'), 'prod')).toMatchObject({ ok: false, seen: 'its "clusters" is not a list' });
  });
});

describe('bootstrap kubeconfig <env>', () => {
  const setup = () => {
    const state = mkdtempSync(join(tmpdir(), 'kubeconfig-cli-'));
    const home = join(state, 'home');
    return { state, home, env: { BOOTSTRAP_STATE_DIR: state, HOME: home, KUBECONFIG: '' } };
  };
  const putStateCopy = (state: string, text: string) => {
    mkdirSync(join(state, 'prod'), { recursive: true });
    writeFileSync(join(state, 'prod', 'kubeconfig'), text, { mode: 0o600 });
  };

  it('parses its options, which belong to it alone', () => {
    expect(parseCommand(['kubeconfig', 'prod', '--merge', '--context', 'p1'])).toEqual({
      kind: 'kubeconfig',
      env: 'prod',
      inventory: undefined,
      merge: true,
      json: false,
      context: 'p1',
    });
    expect(() => parseCommand(['kubeconfig', 'prod', '--context', 'p1'])).toThrow(/give --merge too/);
    expect(() => parseCommand(['prod', '--merge'])).toThrow(/--merge belongs to bootstrap kubeconfig/);
    expect(() => parseCommand(['verify', 'prod', '--output', 'x'])).toThrow(/--output belongs to bootstrap kubeconfig/);
  });

  it('names KUBECONFIG_NOT_FETCHED before any build', async () => {
    const { env } = setup();
    const r = await cli(['kubeconfig', 'prod', '--inventory', 'inventory/prod.yaml'], env);
    expect(r.code).toBe(1);
    expect(r.stdout + r.stderr).toMatch(/KUBECONFIG_NOT_FETCHED/);
  });

  it('names a torn state copy STATE_FILE_CORRUPT with the run that writes it again, as JSON with --json, never a stack trace', async () => {
    const { state, env } = setup();
    for (const torn of [admin('Q0Ex').slice(0, 90), 'clusters: [\n']) {
      putStateCopy(state, torn);
      const r = await cli(['kubeconfig', 'prod', '--inventory', 'inventory/prod.yaml', '--json'], env);
      expect(r.code, r.stdout + r.stderr).toBe(1);
      const stop = JSON.parse(r.stdout.trim().split('\n').at(-1)!);
      expect(stop).toMatchObject({ type: 'stopped', error: { cause: 'STATE_FILE_CORRUPT' } });
      expect(JSON.stringify(stop)).toContain(`${join(state, 'prod', 'kubeconfig')} cannot be read`);
      expect(JSON.stringify(stop)).toContain('bootstrap prod   # its cluster-access step writes the kubeconfig again');
      expect(r.stderr).not.toMatch(/^\s+at /m);
    }
  });

  it('merges into ~/.kube/config at 0600 without printing a credential, then refuses another cluster under that name', async () => {
    const { state, home, env } = setup();
    putStateCopy(state, `# reach the API through the bastion: ssh -L 6443:10.0.0.9:6443 jump\n${admin('Q0Ex')}`);
    const r = await cli(['kubeconfig', 'prod', '--inventory', 'inventory/prod.yaml', '--merge'], env);
    expect(r.code, r.stdout + r.stderr).toBe(0);
    const file = join(home, '.kube', 'config');
    expect(r.stdout).toContain(`context prod added in ${file} (dials https://10.0.0.9:6443); it is the current context`);
    expect(r.stdout).toContain('# reach the API through the bastion');
    expect(r.stdout).not.toMatch(/Q0VSVA|S0VZ|Q0Ex/);
    expect(statSync(file).mode & 0o777).toBe(0o600);
    expect(parse(readFileSync(file, 'utf8'))['current-context']).toBe('prod');

    putStateCopy(state, admin('TkVX'));
    const refused = await cli(['kubeconfig', 'prod', '--inventory', 'inventory/prod.yaml', '--merge'], env);
    expect(refused.code).toBe(1);
    expect(refused.stdout + refused.stderr).toMatch(/KUBECONFIG_MERGE_REFUSED[\s\S]*context "prod" there points at cluster "prod"/);
    expect(parse(readFileSync(file, 'utf8')).clusters[0].cluster['certificate-authority-data']).toBe('Q0Ex');
  });

  it('--output writes a copy at 0600; without it says where the state copy is', async () => {
    const { state, env } = setup();
    putStateCopy(state, admin('Q0Ex'));
    const out = join(state, 'copies', 'prod.kubeconfig');
    const r = await cli(['kubeconfig', 'prod', '--inventory', 'inventory/prod.yaml', '--output', out, '--json'], env);
    expect(r.code, r.stdout + r.stderr).toBe(0);
    expect(JSON.parse(r.stdout)).toEqual({ file: out, server: 'https://10.0.0.9:6443', action: 'written' });
    expect(statSync(out).mode & 0o777).toBe(0o600);
    const kept = await cli(['kubeconfig', 'prod', '--inventory', 'inventory/prod.yaml'], env);
    expect(kept.stdout).toContain(`kubeconfig for prod (dials https://10.0.0.9:6443): ${join(state, 'prod', 'kubeconfig')}`);
  });
});
