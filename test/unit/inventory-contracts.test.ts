// Every inventory contract, each broken by one fixture (test/fixtures/inventory/), asserting the
// cause id and the YAML path an operator would see from `bootstrap validate`.
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { toValidateJson, validateInventory } from '../../src/inventory/index.ts';

const fixture = (name: string) => readFileSync(new URL(`../fixtures/inventory/${name}.yaml`, import.meta.url), 'utf8');
const validate = (name: string) => validateInventory(fixture(name), `${name}.yaml`);
const idsAndPaths = (name: string) => validate(name).violations.map(({ id, path }) => ({ id, path }));

describe('inventory contracts: one fixture per broken contract', () => {
  const cases: [fixture: string, expected: { id: string; path: string }[]][] = [
    // One typo, one violation: the missing "address" it causes is not reported again.
    ['unknown-key', [{ id: 'INVENTORY_SCHEMA', path: 'servers[1].adress' }]],
    ['wrong-type', [{ id: 'INVENTORY_SCHEMA', path: 'ssh.port' }]],
    ['missing-field', [{ id: 'INVENTORY_SCHEMA', path: 'controlPlane.vip' }]],
    ['bad-address', [{ id: 'INVENTORY_SCHEMA', path: 'controlPlane.vip' }]],
    ['environment-mismatch', [{ id: 'ENVIRONMENT_MISMATCH', path: 'environment' }]],
    ['name-invalid', [{ id: 'NAME_INVALID', path: 'servers[1].name' }]],
    ['founder-none', [{ id: 'FOUNDER_NOT_UNIQUE', path: 'servers' }]],
    ['founder-two', [{ id: 'FOUNDER_NOT_UNIQUE', path: 'servers[2].founder' }]],
    ['server-count-even', [{ id: 'SERVER_COUNT_EVEN', path: 'servers' }]],
    ['duplicate-name', [{ id: 'DUPLICATE_NAME', path: 'agents[0].name' }]],
    ['duplicate-address', [{ id: 'DUPLICATE_ADDRESS', path: 'servers[2].address' }]],
    ['vip-is-node-address', [{ id: 'VIP_IS_NODE_ADDRESS', path: 'controlPlane.vip' }]],
    [
      'vip-outside-node-cidr',
      [
        { id: 'VIP_OUTSIDE_NODE_CIDR', path: 'controlPlane.vip' },
        { id: 'VIP_OUTSIDE_NODE_CIDR', path: 'agents[0].address' },
      ],
    ],
    ['vip-in-lb-pool', [{ id: 'VIP_IN_LB_POOL', path: 'controlPlane.vip' }]],
    ['gateway-vip-outside-pool', [{ id: 'GATEWAY_VIP_OUTSIDE_POOL', path: 'network.gatewayVip' }]],
    ['cidr-overlap', [{ id: 'CIDR_OVERLAP', path: 'k3s.serviceCidr' }]],
    ['lb-pool-reversed', [{ id: 'INVENTORY_SCHEMA', path: 'network.lbPool' }]],
    [
      'placeholders',
      [
        { id: 'PLACEHOLDER_VALUE', path: 'controlPlane.vip' },
        { id: 'PLACEHOLDER_VALUE', path: 'network.gatewayVip' },
        { id: 'PLACEHOLDER_VALUE', path: 'gitops.branch' },
      ],
    ],
    [
      'waiver-invalid',
      [
        { id: 'WAIVER_INVALID', path: 'waivers[0].cause' },
        { id: 'WAIVER_INVALID', path: 'waivers[1].reason' },
        { id: 'WAIVER_INVALID', path: 'waivers[2].reason' },
      ],
    ],
  ];

  it.each(cases)('%s', (name, expected) => {
    const result = validate(name);
    expect(result.ok).toBe(false);
    expect(idsAndPaths(name)).toEqual(expected);
  });

  it('the valid fixture has no violations and no warnings (so each fixture above breaks only what it names)', () => {
    const result = validate('valid');
    expect(result.violations).toEqual([]);
    expect(result.warnings).toEqual([]);
    expect(result.ok).toBe(true);
  });
});

describe('inventory contracts: what the operator reads', () => {
  it('says where a misspelt key is and what was meant, with its line', () => {
    const typo = validate('unknown-key').violations.find((v) => v.path === 'servers[1].adress');
    expect(typo?.message).toBe('unknown key "adress" in servers[1] (did you mean "address"?) (line 18)');
  });

  it('a YAML syntax error is INVENTORY_SCHEMA naming the line', () => {
    const result = validate('syntax-error');
    expect(result.ok).toBe(false);
    expect(result.violations.map((v) => v.id)).toEqual(['INVENTORY_SCHEMA']);
    expect(result.violations[0].message).toBe('YAML syntax error at line 5: Tabs are not allowed as indentation');
  });

  it('an empty file is INVENTORY_SCHEMA, not a crash', () => {
    expect(validateInventory('', 'prod.yaml').violations).toEqual([{ id: 'INVENTORY_SCHEMA', path: '', message: 'the inventory file is empty' }]);
  });

  it('names both sides of an overlap and both nodes of a duplicate', () => {
    expect(validate('cidr-overlap').violations[0].message).toMatch(/k3s\.serviceCidr 10\.42\.128\.0\/17 overlaps k3s\.clusterCidr 10\.42\.0\.0\/16/);
    expect(validate('duplicate-address').violations[0].message).toMatch(/192\.168\.2\.11 is already the address of k3s-prod-2/);
  });

  it('a network with host bits set is refused with the network meant', () => {
    const text = fixture('valid').replace('nodeCidr: 192.168.2.0/24', 'nodeCidr: 192.168.2.5/24');
    const [v] = validateInventory(text, 'valid').violations;
    expect(v).toMatchObject({ id: 'INVENTORY_SCHEMA', path: 'network.nodeCidr' });
    expect(v.message).toMatch(/did you mean 192\.168\.2\.0\/24\?/);
  });

  it('a gateway VIP without a pool is GATEWAY_VIP_OUTSIDE_POOL', () => {
    const text = fixture('valid').replace('  lbPool: { start: 192.168.2.20, stop: 192.168.2.30 }\n', '');
    expect(validateInventory(text, 'valid').violations.map(({ id, path }) => ({ id, path }))).toEqual([
      { id: 'GATEWAY_VIP_OUTSIDE_POOL', path: 'network.gatewayVip' },
    ]);
  });

  it('a Cilium HelmRelease without a GitOps checkout is refused (it resolves against the checkout)', () => {
    const text = fixture('valid').replace(/gitops:\n(  .*\n)+/, '');
    expect(validateInventory(text, 'valid').violations.map(({ id, path }) => ({ id, path }))).toEqual([{ id: 'INVENTORY_SCHEMA', path: 'cilium.helmRelease' }]);
  });

  it('an environment name that is not a label is NAME_INVALID', () => {
    const text = fixture('valid').replace('environment: valid', 'environment: Prod_1');
    const ids = validateInventory(text, 'Prod_1.yaml').violations.map(({ id, path }) => ({ id, path }));
    expect(ids).toEqual([{ id: 'NAME_INVALID', path: 'environment' }]);
  });

  it('without a file name the environment is not compared', () => {
    expect(validateInventory(fixture('environment-mismatch')).ok).toBe(true);
  });
});

describe('inventory contracts: several violations at once', () => {
  it('reports every broken contract of one file, in file order', () => {
    expect(idsAndPaths('many-violations')).toEqual([
      { id: 'VIP_IS_NODE_ADDRESS', path: 'controlPlane.vip' },
      { id: 'VIP_OUTSIDE_NODE_CIDR', path: 'controlPlane.vip' },
      { id: 'CIDR_OVERLAP', path: 'network.nodeCidr' },
      { id: 'LB_POOL_INVALID', path: 'network.lbPool.start' },
      { id: 'LB_POOL_INVALID', path: 'network.lbPool.stop' },
      { id: 'GATEWAY_VIP_OUTSIDE_POOL', path: 'network.gatewayVip' },
      { id: 'VIP_OUTSIDE_NODE_CIDR', path: 'servers[0].address' },
      { id: 'DUPLICATE_NAME', path: 'servers[1].name' },
      { id: 'VIP_OUTSIDE_NODE_CIDR', path: 'servers[1].address' },
      { id: 'FOUNDER_NOT_UNIQUE', path: 'servers[1].founder' },
      { id: 'VIP_OUTSIDE_NODE_CIDR', path: 'servers[2].address' },
      { id: 'VIP_OUTSIDE_NODE_CIDR', path: 'agents[0].address' },
    ]);
  });

  it('reports every schema violation at once, too', () => {
    const text = fixture('valid')
      .replace('  user: ops\n', '  user: ops\n  port: "22"\n  prot: 22\n')
      .replace('  vip: 192.168.2.9\n', '  port: 6443\n')
      .replace('{ name: worker-1, address: 192.168.2.40 }', '{ name: worker-1, address: 192.168.2.40, role: gpu }');
    expect(validateInventory(text, 'valid').violations.map(({ id, path }) => ({ id, path }))).toEqual([
      { id: 'INVENTORY_SCHEMA', path: 'ssh.port' },
      { id: 'INVENTORY_SCHEMA', path: 'ssh.prot' },
      { id: 'INVENTORY_SCHEMA', path: 'controlPlane.vip' },
      { id: 'INVENTORY_SCHEMA', path: 'agents[0].role' },
    ]);
  });
});

describe('inventory contracts: one server', () => {
  it('is allowed, with a warning that it is not HA', () => {
    const result = validate('single-server');
    expect(result.ok).toBe(true);
    expect(result.violations).toEqual([]);
    expect(result.warnings).toEqual([{ path: 'servers', message: 'a single server: the control plane is not HA (3 servers tolerate one failure)' }]);
  });
});

describe('bootstrap validate --json', () => {
  it('is exactly {ok, causes[{id, message, path}]}', () => {
    const json = toValidateJson(validate('vip-in-lb-pool'));
    expect(json).toEqual({
      ok: false,
      causes: [
        {
          id: 'VIP_IN_LB_POOL',
          path: 'controlPlane.vip',
          message: 'controlPlane.vip 192.168.2.25 lies in network.lbPool 192.168.2.20-192.168.2.30 (line 11)',
        },
      ],
    });
    expect(toValidateJson(validate('valid'))).toEqual({ ok: true, causes: [] });
  });
});

describe('the example inventories', () => {
  for (const env of ['prod', 'dev']) {
    it(`inventory/${env}.yaml validates ok`, () => {
      const text = readFileSync(new URL(`../../inventory/${env}.yaml`, import.meta.url), 'utf8');
      expect(toValidateJson(validateInventory(text, `${env}.yaml`))).toEqual({ ok: true, causes: [] });
    });
  }
});
