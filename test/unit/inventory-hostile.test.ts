// Inputs that used to crash (exit 70 with a stack) or hang: each is now a named cause, exit 65, quickly.
import { execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { InventoryInvalid } from '../../src/errors.ts';
import { MAX_INVENTORY_BYTES, readInventoryText } from '../../src/inventory/load.ts';
import { validateInventory } from '../../src/inventory/validate.ts';
import { cli } from '../support/cli.ts';

const prod = readFileSync(new URL('../../inventory/prod.yaml', import.meta.url), 'utf8');
const ids = (text: string) => validateInventory(text, 'prod').violations.map((v) => v.id);

describe('hostile inventories are causes, not crashes', () => {
  it.each([
    ['agents: TBD', prod.replace(/^agents:.*$/m, 'agents: TBD')],
    ['controlPlane: TBD', prod.replace(/^controlPlane:\n(?:  .*\n)+/m, 'controlPlane: TBD\n')],
    ['servers: [TBD]', prod.replace(/^servers:\n(?:  .*\n)+/m, 'servers: [TBD]\n')],
    ['waivers: TBD', `${prod}\nwaivers: TBD\n`],
    ['network.lbPool: "${X}"', prod.replace(/^  lbPool:.*$/m, '  lbPool: "${X}"')],
    ['the whole document TBD', 'TBD\n'],
    ['the whole document ${X}', '"${X}"\n'],
  ])('%s → PLACEHOLDER_VALUE', (_name, text) => {
    expect(text).not.toBe(prod);
    expect(ids(text)).toContain('PLACEHOLDER_VALUE');
  });

  it.each([
    ['an alias bomb', 'a: &a [x, x, x, x, x, x, x, x, x, x]\nb: &b [*a, *a, *a, *a, *a, *a, *a, *a, *a, *a]\nc: [*b, *b, *b, *b, *b, *b, *b, *b, *b, *b]\n'],
    ['101 aliases of one scalar', `u: &u x\nl: [${Array(101).fill('*u').join(', ')}]\n`],
    ['an alias to no anchor', `${prod}\nextra: *nope\n`],
    ['a self-referencing alias', 'agents: &r [*r]\n'],
  ])('%s → INVENTORY_SCHEMA naming the alias', (_name, text) => {
    const v = validateInventory(text, 'prod').violations;
    expect(v.map((x) => x.id)).toEqual(['INVENTORY_SCHEMA']);
    expect(v[0].message).toMatch(/alias/i);
  });

  it.each([
    ['a list as a key', prod.replace(/^ssh:/m, '? [complex, key]\n: 1\nssh:')],
    ['a map as a key', prod.replace(/^agents:.*$/m, 'agents: []\n{a: 1}: x')],
    ['an alias as a key', prod.replace(/^agents:.*$/m, 'agents: &k []\n*k : x')],
  ])('%s → INVENTORY_SCHEMA naming its line, and no Node warning', async (_name, text) => {
    const warnings: unknown[] = [];
    const onWarning = (w: unknown) => warnings.push(w);
    process.on('warning', onWarning);
    try {
      const v = validateInventory(text, 'prod').violations;
      expect(v.map((x) => x.id)).toEqual(['INVENTORY_SCHEMA']);
      expect(v[0].message).toMatch(/a key at line \d+ is a list, a map or an alias/);
      await new Promise((r) => setImmediate(r)); // Node emits warnings on a later tick
    } finally {
      process.off('warning', onWarning);
    }
    expect(warnings).toEqual([]);
  });

  it('a 320 KB run of "${" is judged in linear time', () => {
    const text = prod.replace(/^  user: .*$/m, `  user: "${'${'.repeat(160_000)}"`);
    const t0 = Date.now();
    validateInventory(text, 'prod');
    expect(Date.now() - t0).toBeLessThan(2000);
  });
});

describe('readInventoryText refuses what is not an inventory file before reading it', () => {
  let dir: string;
  beforeEach(() => (dir = mkdtempSync(join(tmpdir(), 'inventory-hostile-'))));
  afterEach(() => rmSync(dir, { recursive: true, force: true }));

  const refusal = async (file: string) => {
    const err = await readInventoryText(file).catch((e) => e);
    expect(err).toBeInstanceOf(InventoryInvalid);
    return (err as InventoryInvalid).violations[0].message;
  };

  it('a FIFO with no writer, at once', async () => {
    const fifo = join(dir, 'prod.yaml');
    execFileSync('mkfifo', [fifo]);
    const t0 = Date.now();
    expect(await refusal(fifo)).toMatch(/not a regular file/);
    expect(Date.now() - t0).toBeLessThan(1000);
  });

  it('a folder, a device, a file over 1 MiB and a NUL byte', async () => {
    mkdirSync(join(dir, 'folder.yaml'));
    expect(await refusal(join(dir, 'folder.yaml'))).toMatch(/is a folder/);
    expect(await refusal('/dev/zero')).toMatch(/not a regular file/);
    writeFileSync(join(dir, 'big.yaml'), `# ${'x'.repeat(MAX_INVENTORY_BYTES)}\n`);
    expect(await refusal(join(dir, 'big.yaml'))).toMatch(/at most 1048576 bytes/);
    writeFileSync(join(dir, 'nul.yaml'), `${prod}\0`);
    expect(await refusal(join(dir, 'nul.yaml'))).toMatch(/NUL/);
  });

  it('validate --json prints its JSON object for an unreadable file too', async () => {
    mkdirSync(join(dir, 'prod.yaml'));
    const r = await cli(['validate', '--inventory', join(dir, 'prod.yaml'), '--json']);
    expect(r.code).toBe(65);
    const json = JSON.parse(r.stdout);
    expect(json.ok).toBe(false);
    expect(json.causes[0]).toMatchObject({ id: 'INVENTORY_SCHEMA', path: '' });
  });
});

describe('fields that are legal YAML but dangerous are refused by name', () => {
  const bad = (find: RegExp, replace: string) => {
    const text = prod.replace(find, replace);
    expect(text).not.toBe(prod);
    return validateInventory(text, 'prod').violations;
  };
  it.each([
    ['ssh.user with a shell metacharacter', /^ {2}user: .*$/m, '  user: "ops;touch x"', 'ssh.user'],
    ['ssh.user root', /^ {2}user: .*$/m, '  user: root', 'ssh.user'],
    ['bastion port 0', /^ {2}user: ops$/m, '  user: ops\n  bastion: ops@192.168.2.1:0', 'ssh.bastion'],
    ['bastion port 99999', /^ {2}user: ops$/m, '  user: ops\n  bastion: 192.168.2.1:99999', 'ssh.bastion'],
    ['bastion ","', /^ {2}user: ops$/m, '  user: ops\n  bastion: ","', 'ssh.bastion'],
    ['a newline in a path', /^ {2}identityFile: .*$/m, '  identityFile: "/home/ops/.ssh/id\\nx"', 'ssh.identityFile'],
    ['an interface that reads as an option', /^ {2}interface: .*$/m, '  interface: --help', 'controlPlane.interface'],
    ['gitops.url of the ext:: kind (git runs a command)', /^ {2}url: .*$/m, '  url: "ext::sh -c touch% x"', 'gitops.url'],
    ['gitops.url of the file:// kind', /^ {2}url: .*$/m, '  url: file:///srv/git/home-network.git', 'gitops.url'],
  ])('%s → INVENTORY_SCHEMA at the path', (_name, find, replace, path) => {
    const v = bad(find, replace);
    expect(v.map((x) => [x.id, x.path])).toContainEqual(['INVENTORY_SCHEMA', path]);
  });

  it("a LoadBalancer pool holding the servers' addresses is LB_POOL_INVALID", () => {
    const v = bad(/^ {2}lbPool:.*$/m, '  lbPool: { start: 192.168.2.10, stop: 192.168.2.12 }');
    expect(v.map((x) => x.id)).toContain('LB_POOL_INVALID');
    expect(v.find((x) => x.id === 'LB_POOL_INVALID')!.message).toContain('k3s-prod-1');
  });

  it.each([
    ['the network address', '192.168.2.0'],
    ['the broadcast address', '192.168.2.255'],
  ])('a VIP on %s is ADDRESS_RESERVED', (what, vip) => {
    const v = bad(/^ {2}vip: .*$/m, `  vip: ${vip}`);
    expect(v.map((x) => [x.id, x.path])).toContainEqual(['ADDRESS_RESERVED', 'controlPlane.vip']);
    expect(v.find((x) => x.id === 'ADDRESS_RESERVED')!.message).toContain(`controlPlane.vip ${vip} is ${what} of network.nodeCidr 192.168.2.0/24`);
  });
});

describe('files the inventory names are refused before any connection when reading them would block', () => {
  it('a FIFO as ssh.knownHostsFile or flux.deployKeyFile is ARTIFACT_MISSING, not a hang', async () => {
    const { checkArtifacts } = await import('../../src/inventory/artifacts.ts');
    const dir = mkdtempSync(join(tmpdir(), 'inventory-fifo-'));
    try {
      mkdirSync(join(dir, 'k3s'));
      writeFileSync(join(dir, 'k3s', 'k3s'), '');
      execFileSync('mkfifo', [join(dir, 'known_hosts'), join(dir, 'deploy-key')]);
      const paths = {
        k3sArtifacts: join(dir, 'k3s'),
        k3sBinary: join(dir, 'k3s', 'k3s'),
        sshKnownHostsFile: join(dir, 'known_hosts'),
        fluxDeployKeyFile: join(dir, 'deploy-key'),
      };
      const errors = checkArtifacts({ paths } as any);
      expect(errors.map((e) => e.message)).toEqual([
        `flux.deployKeyFile: ${join(dir, 'deploy-key')} is a FIFO, socket or device, not a file`,
        `ssh.knownHostsFile: ${join(dir, 'known_hosts')} is a FIFO, socket or device, not a file`,
      ]);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
