// The schema: one source (src/inventory/schema.ts), the committed inventory/schema.json generated
// from it, defaults filled in after validation, and placeholders named once, not twice.
import { readFileSync } from 'node:fs';
import { Ajv } from 'ajv';
import { describe, expect, it } from 'vitest';
import { renderSchemaFile, validateInventory } from '../../src/inventory/index.ts';
import { inventorySchema } from '../../src/inventory/schema.ts';
import { placeholderReason } from '../../src/inventory/placeholders.ts';

const minimal = `
environment: lab
ssh: { user: ops }
k3s: { version: v1.33.5+k3s1, artifacts: ../artifacts/k3s }
controlPlane: { vip: 10.0.0.9 }
network: { nodeCidr: 10.0.0.0/24 }
servers:
  - { name: lab-1, address: 10.0.0.10, founder: true }
  - { name: lab-2, address: 10.0.0.11 }
  - { name: lab-3, address: 10.0.0.12 }
`;

describe('inventory/schema.json', () => {
  it('is exactly what src/inventory/schema.ts produces (regenerate: npx tsx src/inventory/write-schema.ts)', () => {
    const committed = readFileSync(new URL('../../inventory/schema.json', import.meta.url), 'utf8');
    expect(committed).toBe(renderSchemaFile());
  });

  it('is what the example inventories point their editors at', () => {
    for (const env of ['prod', 'dev']) {
      const text = readFileSync(new URL(`../../inventory/${env}.yaml`, import.meta.url), 'utf8');
      expect(text.split('\n')[0]).toBe('# yaml-language-server: $schema=./schema.json');
    }
  });
});

describe('the schema itself', () => {
  // The run's validator does not check it against the meta-schema (src/inventory/schema-check.ts:
  // validateSchema off, for the start's CPU), so this does, once, here.
  it('satisfies the JSON Schema meta-schema, in strict mode with the formats the run adds', () => {
    const ajv = new Ajv({ strict: true, allErrors: true });
    ajv.addFormat('ipv4', true).addFormat('ipv4-cidr', true);
    expect(ajv.validateSchema(inventorySchema), JSON.stringify(ajv.errors)).toBe(true);
    // A keyword misspelt in a schema is still refused as it compiles (strict mode).
    expect(() => new Ajv({ strict: true, validateSchema: false }).compile({ type: 'object', propertys: {} })).toThrow(/unknown keyword/);
  });
});

describe('inventory defaults', () => {
  it('fills every optional field with its documented default', () => {
    const result = validateInventory(minimal, 'lab');
    expect(result.violations).toEqual([]);
    const inv = result.inventory!;
    expect(inv.ssh).toEqual({ user: 'ops', port: 22, knownHostsFile: '~/.ssh/known_hosts' });
    expect(inv.k3s.clusterCidr).toBe('10.42.0.0/16');
    expect(inv.k3s.serviceCidr).toBe('10.43.0.0/16');
    expect(inv.controlPlane).toEqual({ vip: '10.0.0.9', port: 6443, interface: 'auto' });
    expect(inv.agents).toEqual([]);
    expect(inv.waivers).toEqual([]);
    expect(inv.gitops).toBeUndefined();
  });

  it('keeps values the operator wrote', () => {
    const text = minimal
      .replace('ssh: { user: ops }', 'ssh: { user: ops, port: 2222, knownHostsFile: ./known_hosts }')
      .replace('controlPlane: { vip: 10.0.0.9 }', 'controlPlane: { vip: 10.0.0.9, port: 6443, interface: eth1 }');
    const inv = validateInventory(text, 'lab').inventory!;
    expect(inv.ssh.port).toBe(2222);
    expect(inv.ssh.knownHostsFile).toBe('./known_hosts');
    expect(inv.controlPlane).toEqual({ vip: '10.0.0.9', port: 6443, interface: 'eth1' });
  });

  it('refuses a control-plane port other than 6443, saying why', () => {
    const text = minimal.replace('controlPlane: { vip: 10.0.0.9 }', 'controlPlane: { vip: 10.0.0.9, port: 16443 }');
    const result = validateInventory(text, 'lab');
    expect(result.inventory).toBeUndefined();
    expect(result.violations).toHaveLength(1);
    expect(result.violations[0]).toMatchObject({ id: 'INVENTORY_SCHEMA', path: 'controlPlane.port' });
    expect(result.violations[0].message).toMatch(
      /^controlPlane\.port must be 6443 \(found number 16443\): The API port: 6443 only \(k3s listens on 6443 and kube-vip in ARP mode does not translate ports/,
    );
  });
});

describe('placeholders', () => {
  it.each([
    ['TBD', true],
    ['TBD-x', true],
    ['TBD-PROD-GATEWAY', true],
    ['${VIP}', true],
    ['https://${HOST}:6443', true],
    ['', true],
    ['   ', true],
    ['192.168.2.9', false],
    ['k3s-prod-1', false],
    ['$HOME/x', false],
  ])('%j is a placeholder: %s', (value, expected) => {
    expect(placeholderReason(value) !== null).toBe(expected);
  });

  it('are found anywhere in the document, each once, with its path (no schema error for the same value)', () => {
    const text = minimal
      .replace('controlPlane: { vip: 10.0.0.9 }', 'controlPlane: { vip: "${VIP}" }')
      .replace('{ name: lab-2, address: 10.0.0.11 }', '{ name: TBD-x, address: 10.0.0.11 }')
      .replace('ssh: { user: ops }', 'ssh: { user: "" }');
    const result = validateInventory(text, 'lab');
    expect(result.violations.map(({ id, path }) => ({ id, path }))).toEqual([
      { id: 'PLACEHOLDER_VALUE', path: 'ssh.user' },
      { id: 'PLACEHOLDER_VALUE', path: 'controlPlane.vip' },
      { id: 'PLACEHOLDER_VALUE', path: 'servers[1].name' },
    ]);
    expect(result.violations[1].message).toBe('controlPlane.vip contains "${VIP}", a variable nothing substitutes here (line 5)');
  });

  it('a key with nothing after it is an empty value, not a crash', () => {
    const text = minimal.replace('controlPlane: { vip: 10.0.0.9 }', 'controlPlane:\n  vip:');
    expect(validateInventory(text, 'lab').violations.map(({ id, path }) => ({ id, path }))).toEqual([{ id: 'PLACEHOLDER_VALUE', path: 'controlPlane.vip' }]);
  });

  it('still lets the other contracts speak when a placeholder is only a string', () => {
    const text = minimal
      .replace('controlPlane: { vip: 10.0.0.9 }', 'controlPlane: { vip: TBD-VIP }')
      .replace('{ name: lab-3, address: 10.0.0.12 }', '{ name: lab-3, address: 10.0.0.11 }');
    expect(validateInventory(text, 'lab').violations.map(({ id, path }) => ({ id, path }))).toEqual([
      { id: 'PLACEHOLDER_VALUE', path: 'controlPlane.vip' },
      { id: 'DUPLICATE_ADDRESS', path: 'servers[2].address' },
    ]);
  });
});

describe('waivers', () => {
  it('a waivable cause with a reason is valid and kept for the run to print', () => {
    const text = `${minimal}waivers:\n  - { cause: CGROUP_V2_MISSING, reason: the lab machine runs a cgroup v1/v2 hybrid }\n`;
    const result = validateInventory(text, 'lab');
    expect(result.violations).toEqual([]);
    expect(result.inventory!.waivers).toEqual([{ cause: 'CGROUP_V2_MISSING', reason: 'the lab machine runs a cgroup v1/v2 hybrid' }]);
  });

  it('a cause that is not waivable, one waived twice, or an empty reason is WAIVER_INVALID', () => {
    const text = `${minimal}waivers:
  - { cause: SSH_AUTH_FAILED, reason: flaky }
  - { cause: BPFFS_MISSING, reason: "" }
  - { cause: BPFFS_MISSING, reason: the lab mounts it later }
`;
    const result = validateInventory(text, 'lab');
    expect(result.violations.map(({ id, path }) => ({ id, path }))).toEqual([
      { id: 'WAIVER_INVALID', path: 'waivers[0].cause' },
      { id: 'WAIVER_INVALID', path: 'waivers[1].reason' },
      { id: 'WAIVER_INVALID', path: 'waivers[2].cause' },
    ]);
    expect(result.violations[0].message).toMatch(
      /^SSH_AUTH_FAILED cannot be waived; only CGROUP_V2_MISSING, KERNEL_TOO_OLD, MODULE_MISSING, BPFFS_MISSING can/,
    );
  });

  it('a waiver without a reason at all is a schema violation', () => {
    const text = `${minimal}waivers:\n  - { cause: KERNEL_TOO_OLD }\n`;
    expect(validateInventory(text, 'lab').violations.map(({ id, path }) => ({ id, path }))).toEqual([{ id: 'INVENTORY_SCHEMA', path: 'waivers[0].reason' }]);
  });
});
