// Every cause's remedy fits what raises it (issue 16): it names the thing the stop's evidence names — the
// port for PORT_IN_USE, the inventory field for an inventory contract, the package for TOOL_MISSING, the
// module, the flag, the file, the section. One row per catalogue id (a cause added without a row fails the
// first test): what the evidence names and how the remedy must name it, and an example of the stop — raised
// by the real code where that code is pure, else built as its raise site builds it (its file is named). Both
// halves are checked: the example's evidence must show the thing (so a row cannot claim what no stop says),
// and the remedy the operator reads with it (`do:`) must name it too.
import { chartInfo } from '../../phases/cilium/chart.ts';
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { allCauses, causeInfo, type CauseId } from '../../src/causes/catalogue.ts';
import { CauseError, type Evidence, type Violation } from '../../src/errors.ts';
import { validateInventory } from '../../src/inventory/index.ts';
import { fromText } from '../../src/inventory/load.ts';
import { missingSections } from '../../src/inventory/sections.ts';
import { checkArtifacts } from '../../src/inventory/artifacts.ts';
import type { HostRef, ProbeResults } from '../../src/engine/phase.ts';
import { baselineStops, duplicateIdentities } from '../../phases/node-baseline/checks.ts';
import { HOST_TOOLS, toolStops } from '../../phases/node-baseline/tools.ts';
import { tokenStops } from '../../phases/k3s-founder.ts';
import { matchJoinFailure } from '../../src/k3s/journal-causes.ts';
import { checkTokenForm } from '../../src/k3s/cluster-token.ts';
import { checkCiliumValues } from '../../phases/cilium/values-gates.ts';
import { checkChartVersion, checkValuesSchema } from '../../phases/cilium/chart.ts';
import { matchCiliumAgentLog } from '../../phases/cilium/agent-log.ts';
import { matchKubeVipLog } from '../../phases/kube-vip/log-causes.ts';
import { chooseVipInterface } from '../../phases/kube-vip/nic.ts';
import { checkAgentServiceHost } from '../../src/addons/cilium-agent-env.ts';
import { checkBackup } from '../../src/backup/checks.ts';
import type { Backup } from '../../src/backup/store.ts';
import { healthyBaselineProbe, ok, PROBE_NOW } from '../support/baseline-probe.ts';
import { pathStops, type RunningRelease } from '../../src/k3s/upgrade-path.ts';
import { installSteps } from '../../phases/k3s/install-steps.ts';
import { dropinsChecked } from '../../phases/k3s/dropins.ts';
import { rollingLeftOut } from '../../phases/k3s/rolling-facts.ts';

const runningAt = (host: string, version: string, etcd?: string): RunningRelease => ({
  host,
  versionLine: `k3s version ${version} (8e8f2a47)`,
  ...(etcd && { etcd }),
});

/** A stop as the operator gets it: a CauseError, or one violation of an inventory contract (exit 65). */
type Example = CauseError | Violation;

interface Row {
  /** What the evidence names (matched against the example's message, host and evidence). */
  names: RegExp;
  /** How the remedy names the same thing (the same pattern unless the evidence words it otherwise). */
  remedy?: RegExp;
  example: () => Example;
}

// ---- examples raised by the real code -------------------------------------------------------------------

const fixture = (name: string) => readFileSync(new URL(`../fixtures/inventory/${name}.yaml`, import.meta.url), 'utf8');

/** The first violation of `id` that validating the text gives (a fixture, or the valid one with an edit). */
function violation(id: CauseId, text: string, file = 'valid.yaml'): Violation {
  const found = validateInventory(text, file).violations.find((v) => v.id === id);
  if (!found) throw new Error(`validating gave no ${id}`);
  return found;
}
const broken = (name: string) => (id: CauseId) => violation(id, fixture(name), `${name}.yaml`);
const validWith = (from: string, to: string) => {
  const text = fixture('valid');
  if (!text.includes(from)) throw new Error(`valid.yaml has no ${from}`);
  return text.replace(from, to);
};

const loaded = (text = fixture('valid')) => fromText(text, 'valid.yaml', '/home/ops');

/** The one stop of `id` among the stops a pure check returned. */
function one(id: CauseId, stops: CauseError[]): CauseError {
  const found = stops.find((s) => s.causeId === id);
  if (!found) throw new Error(`the check gave ${stops.map((s) => s.causeId).join(', ') || 'no stop'}, not ${id}`);
  return found;
}

const server: HostRef = { name: 'k3s-prod-1', address: '192.168.2.10', role: 'server', founder: true };
const now = PROBE_NOW;
const healthyProbe = healthyBaselineProbe;
const baseline = (id: CauseId, change: ProbeResults, vipInterface = 'auto') =>
  one(id, baselineStops({ host: server, probe: { ...healthyProbe(), ...change }, binaryArch: 'x86_64', operatorNow: now, vipInterface }));

function identities(key: 'machineId' | 'productUuid'): CauseError {
  const probe = (v: string) => ({
    ...healthyProbe(),
    machineId: ok('m-1\n'),
    productUuid: ok(`${v}\n`),
    ...(key === 'machineId' ? { machineId: ok('same\n') } : {}),
  });
  const seen = new Map<HostRef, ProbeResults>([
    [server, probe(key === 'productUuid' ? 'same' : 'u-1')],
    [{ ...server, name: 'k3s-prod-2', address: '192.168.2.11', founder: false }, probe(key === 'productUuid' ? 'same' : 'u-2')],
  ]);
  return one('DUPLICATE_HOST_IDENTITY', duplicateIdentities(seen));
}

/** A k3s journal line recorded from upstream (test/fixtures/upstream-lines/k3s.txt), named as the join gate names it. */
const upstream = readFileSync(new URL('../fixtures/upstream-lines/k3s.txt', import.meta.url), 'utf8').split('\n');
function journal(id: CauseId, containing: string, host = 'k3s-prod-2'): CauseError {
  const line = upstream.find((l) => !l.startsWith('#') && l.includes(containing));
  if (!line) throw new Error(`no upstream line has ${containing}`);
  const m = matchJoinFailure(line);
  if (m?.id !== id) throw new Error(`${containing} is named ${m?.id}, not ${id}`);
  // As phases/k3s/gates.ts throws it.
  return new CauseError(m.id, {
    host,
    message: m.detail ? `critical configuration mismatched: ${m.detail}` : undefined,
    evidence: { command: 'journalctl -u k3s.service', seen: m.line, excerpt: m.line },
  });
}

const expectations = {
  vip: '192.168.2.9',
  port: 6443,
  clusterCidr: '10.42.0.0/16',
  kubernetesIp: '10.43.0.1',
  nodes: [{ name: 'k3s-prod-1', address: '192.168.2.10' }],
};
const values = (id: CauseId) => one(id, checkCiliumValues({}, expectations));

function backupStop(id: CauseId): CauseError {
  const backup = {
    dir: 'backups/2026-11-30T05-40-12Z',
    snapshot: 'backups/2026-11-30T05-40-12Z/snapshot',
    tokenFile: 'backups/2026-11-30T05-40-12Z/cluster-token.json',
    manifest: { id: '2026-11-30T05-40-12Z', k3sVersion: 'v1.34.1+k3s1', sha256: 'a'.repeat(64) },
  } as Backup;
  const token = id === 'BACKUP_TOKEN_MISSING' ? undefined : { secret: 'backup-secret' };
  return one(id, checkBackup({ backup, token, snapshotSha256: 'b'.repeat(64), inventoryVersion: 'v1.33.5+k3s1', envToken: { secret: 'other-secret' } }));
}

/** The install's unit step on a running agent whose unit changed, in a run that leaves the rolling change out. */
function restartOutsideRolling(): CauseError {
  const step = installSteps(() => 'token').find((s) => s.id === 'unit')!;
  const host: HostRef = { name: 'k3s-prod-4', address: '192.168.2.13', role: 'agent', founder: false };
  const ctx = { facts: { run: (f: unknown) => (f === rollingLeftOut ? true : undefined), get: () => undefined } };
  const plan = step.plan({ host, ctx, local: undefined, probe: { file: ok('644\n[Unit]\n'), k3sActive: ok('active\n') } } as never);
  return one('RESTART_NEEDS_ROLLING', plan.stops ?? []);
}

/** The config step on a server whose config.yaml.d holds a drop-in replacing the cluster CIDR bootstrap writes. */
function dropinOverride(): CauseError {
  const step = dropinsChecked({ id: 'config', title: 'config', plan: () => ({ changes: [] }) }, () => 'cluster-cidr: 10.42.0.0/16\ntls-san: [192.168.2.9]\n');
  const probe = { configDropins: ok('== /etc/rancher/k3s/config.yaml.d/50-cloud.yaml\ncluster-cidr\ntls-san+\n'), unitDropins: ok('') };
  return one('K3S_DROPIN_OVERRIDES', step.plan({ host: server, probe, local: undefined, ctx: {} } as never).stops ?? []);
}

/** What a raise site throws, built as that site builds it (the site is named in each row). */
const stop =
  (id: CauseId, evidence: Evidence, opts: { host?: string; message?: string } = {}) =>
  () =>
    new CauseError(id, { ...opts, evidence });

// ---- the table --------------------------------------------------------------------------------------------

const rows: Record<CauseId, Row | Row[]> = {
  // inventory: src/inventory/contracts*.ts, schema-check.ts, parse.ts, placeholders.ts, sections.ts, artifacts.ts
  INVENTORY_SCHEMA: [
    { names: /servers\[1\]\.adress/, remedy: /at the path named/, example: () => broken('unknown-key')('INVENTORY_SCHEMA') },
    { names: /YAML syntax error at line 5/, remedy: /the YAML line/, example: () => broken('syntax-error')('INVENTORY_SCHEMA') },
  ],
  ENVIRONMENT_MISMATCH: { names: /environment/, example: () => broken('environment-mismatch')('ENVIRONMENT_MISMATCH') },
  NAME_INVALID: { names: /servers\[1\]\.name/, remedy: /Rename the node .* at the path named/, example: () => broken('name-invalid')('NAME_INVALID') },
  FOUNDER_NOT_UNIQUE: { names: /founder: true/, example: () => broken('founder-none')('FOUNDER_NOT_UNIQUE') },
  SERVER_COUNT_EVEN: { names: /an even count/, remedy: /an odd number of servers/, example: () => broken('server-count-even')('SERVER_COUNT_EVEN') },
  DUPLICATE_NAME: { names: /is already the name of/, remedy: /its own name/, example: () => broken('duplicate-name')('DUPLICATE_NAME') },
  DUPLICATE_ADDRESS: {
    names: /servers\[2\]\.address/,
    remedy: /the address at the path named/,
    example: () => broken('duplicate-address')('DUPLICATE_ADDRESS'),
  },
  VIP_IS_NODE_ADDRESS: { names: /controlPlane\.vip/, example: () => broken('vip-is-node-address')('VIP_IS_NODE_ADDRESS') },
  VIP_OUTSIDE_NODE_CIDR: { names: /network\.nodeCidr/, example: () => broken('vip-outside-node-cidr')('VIP_OUTSIDE_NODE_CIDR') },
  VIP_IN_LB_POOL: { names: /network\.lbPool/, example: () => broken('vip-in-lb-pool')('VIP_IN_LB_POOL') },
  GATEWAY_VIP_OUTSIDE_POOL: { names: /network\.gatewayVip/, example: () => broken('gateway-vip-outside-pool')('GATEWAY_VIP_OUTSIDE_POOL') },
  CIDR_OVERLAP: { names: /overlaps/, remedy: /two networks named/, example: () => broken('cidr-overlap')('CIDR_OVERLAP') },
  PLACEHOLDER_VALUE: { names: /controlPlane\.vip/, remedy: /at the path named/, example: () => broken('placeholders')('PLACEHOLDER_VALUE') },
  WAIVER_INVALID: { names: /waive/, example: () => broken('waiver-invalid')('WAIVER_INVALID') },
  ADDRESS_RESERVED: {
    names: /network\.nodeCidr/,
    example: () => violation('ADDRESS_RESERVED', validWith('vip: 192.168.2.9', 'vip: 192.168.2.255')),
  },
  LB_POOL_INVALID: {
    names: /network\.lbPool/,
    example: () => violation('LB_POOL_INVALID', validWith('lbPool: { start: 192.168.2.20,', 'lbPool: { start: 192.168.2.10,')),
  },
  INVENTORY_SECTION_MISSING: {
    names: /flux section/,
    example: () =>
      missingSections(
        loaded(fixture('valid').split('\nflux:')[0]).inventory,
        { id: 'flux', before: 'verify' },
        ['gitops', 'flux'],
        'Flux syncs the repository',
      )!,
  },
  ARTIFACT_MISSING: {
    names: /cilium\.chart: .* does not exist/,
    remedy: /Put the file at the path named/,
    example: () => {
      const { derived } = loaded();
      const dirs = [derived.paths.k3sArtifacts, derived.paths.gitopsCheckout];
      return one(
        'ARTIFACT_MISSING',
        checkArtifacts(derived, {
          kind: (p) => (p === derived.paths.ciliumChart || p === derived.paths.sshKnownHostsFile ? 'missing' : dirs.includes(p) ? 'dir' : 'file'),
        }),
      );
    },
  },

  // artifacts: src/artifacts/fetch.ts (as `failed` and `noSource` build them)
  ARTIFACT_NOT_FOUND: {
    names: /HTTP 404; .*k3s\.version/,
    remedy: /version in the inventory/,
    example: stop(
      'ARTIFACT_NOT_FOUND',
      {
        seen: 'GET https://github.com/k3s-io/k3s/releases/download/v1.33.5%2Bk3s1/k3s: HTTP 404; the release of k3s.version v1.33.5+k3s1',
        command:
          'curl -fL -C - -o artifacts/k3s.part https://github.com/k3s-io/k3s/releases/download/v1.33.5%2Bk3s1/k3s && mv artifacts/k3s.part artifacts/k3s',
      },
      { message: 'k3s binary: https://github.com/k3s-io/k3s/releases/download/v1.33.5%2Bk3s1/k3s is not there (HTTP 404)' },
    ),
  },
  ARTIFACT_UNREACHABLE: {
    names: /GET https:\/\/\S+: getaddrinfo ENOTFOUND/,
    remedy: /again where the URL answers/,
    example: stop(
      'ARTIFACT_UNREACHABLE',
      {
        seen: 'GET https://helm.cilium.io/index.yaml: getaddrinfo ENOTFOUND helm.cilium.io; the Cilium chart 1.19.5',
        command: 'curl -fL -o charts/cilium-1.19.5.tgz https://helm.cilium.io/cilium-1.19.5.tgz',
      },
      { message: 'Cilium chart: https://helm.cilium.io/cilium-1.19.5.tgz could not be downloaded' },
    ),
  },
  ARTIFACT_TRUNCATED: {
    names: /kept in \S+\.part/,
    remedy: /resumes from the bytes kept/,
    example: stop(
      'ARTIFACT_TRUNCATED',
      { seen: '100000 of 200000 bytes received (aborted), kept in artifacts/k3s.part', command: 'curl -fL -C - -o artifacts/k3s.part https://example/k3s' },
      { message: 'k3s binary: the download from https://example/k3s ended at 100000 of 200000 bytes' },
    ),
  },
  ARTIFACT_CHECKSUM_MISMATCH: {
    names: /sha256 [0-9a-f]+ .*expected [0-9a-f]+/,
    remedy: /Download again/,
    example: stop(
      'ARTIFACT_CHECKSUM_MISMATCH',
      {
        seen: `sha256 ${'c'.repeat(64)} (200000 bytes), expected ${'d'.repeat(64)} (https://example/sha256sum-amd64.txt)`,
        command: 'curl -fL -o artifacts/k3s.part https://example/k3s',
      },
      { message: 'k3s binary: the download from https://example/k3s is not the file https://example/sha256sum-amd64.txt names; discarded' },
    ),
  },
  ARTIFACT_NO_SOURCE: {
    names: /no `?url`?/,
    remedy: /add `url`/,
    example: stop(
      'ARTIFACT_NO_SOURCE',
      {
        seen: 'k3s.imageArchives[0] has no url: an image archive is built by the operator',
        command: 'skopeo copy --all docker://ghcr.io/kube-vip/kube-vip:v0.9.2 oci-archive:artifacts/kube-vip.tar:ghcr.io/kube-vip/kube-vip:v0.9.2',
      },
      { message: 'k3s.imageArchives[0]: artifacts/kube-vip.tar is missing and bootstrap cannot download it' },
    ),
  },

  // phases/cilium/chart.ts chartInfo, in the cilium phase's prepare
  ARTIFACT_INVALID: {
    names: /cilium\.chart: \S+ is not a gzip-compressed tar archive/,
    remedy: /the chart: `bootstrap artifacts <env>`/,
    example: () => {
      try {
        chartInfo(Buffer.from('<html>503</html>'), 'charts/cilium-1.19.5.tgz');
      } catch (e) {
        return e as CauseError;
      }
      throw new Error('chartInfo accepted garbage');
    },
  },
  // src/transport/ssh-config.ts unreadable
  SSH_CONFIG_UNREADABLE: {
    names: /\/home\/ops\/\.ssh\/config is a FIFO/,
    remedy: /~\/\.ssh\/config|regular file/,
    example: stop(
      'SSH_CONFIG_UNREADABLE',
      { command: 'ls -l /home/ops/.ssh/config', seen: '/home/ops/.ssh/config is a FIFO, not a regular file' },
      { message: 'ssh client configuration: /home/ops/.ssh/config is a FIFO, not a regular file' },
    ),
  },
  // src/engine/session.ts, the lock's heartbeat
  LOCK_LOST: {
    names: /owner record of \/run\/lock\/bootstrap\.lock/,
    remedy: /bootstrap\.lock\/owner/,
    example: stop(
      'LOCK_LOST',
      {
        command: 'sudo cat /run/lock/bootstrap.lock/owner',
        seen: 'the owner record of /run/lock/bootstrap.lock on k3s-prod-2 names another run (or none), not 2026-12-05T00-00-00-000Z-1a2b3c4d',
      },
      { host: 'k3s-prod-2', message: "k3s-prod-2: /run/lock/bootstrap.lock is no longer this run's" },
    ),
  },

  // engine: src/engine/*.ts
  GATE_FAILED: {
    names: /budget/,
    remedy: /run log/,
    example: stop('GATE_FAILED', { seen: 'gate "VIP answers" did not end within its budget of 180 s' }, { host: 'k3s-prod-1' }),
  },
  // src/engine/run.ts gateOverBudget
  GATE_LOOK_HUNG: {
    names: /k3s crictl exec/,
    remedy: /by hand on the named host/,
    example: stop(
      'GATE_LOOK_HUNG',
      {
        command: 'sudo sh -s (1 read-only probe: k3s crictl exec --name cilium-agent --state running -q sh -c …)',
        seen: 'gate "Cilium agent Ready" did not end within its budget of 60 s: it was still waiting for this command on k3s-prod-4, running for 66 s with no answer',
      },
      { host: 'k3s-prod-4' },
    ),
  },
  PROBE_FAILED: {
    names: /probes/,
    remedy: /output so far/,
    example: stop('PROBE_FAILED', {
      command: 'sh -s (12 read-only probes, sudo)',
      exitCode: null,
      seen: 'the batch did not finish within its budget',
      excerpt: 'partial',
    }),
  },
  APPLY_FAILED: {
    names: /systemctl restart k3s/,
    remedy: /the command and its output/,
    example: stop('APPLY_FAILED', { command: 'systemctl restart k3s', exitCode: 1, seen: 'exit 1', excerpt: 'Job for k3s.service failed' }),
  },
  LOCK_HELD: {
    names: /another run|the holder/,
    remedy: /other run/,
    example: stop('LOCK_HELD', {
      seen: 'run 2026-12-01T10-00-00Z of ops (refreshed 40 s ago) holds the lock',
      command: 'sudo cat /var/lib/bootstrap/lock/owner   # the holder',
    }),
  },
  STATE_FILE_CORRUPT: [
    {
      names: /journal/,
      example: stop('STATE_FILE_CORRUPT', {
        seen: 'journal.json cannot be read: Unexpected end of JSON input',
        command: 'rm journal.json   # then the run redoes every phase',
      }),
    },
    {
      names: /kubeconfig/,
      example: stop('STATE_FILE_CORRUPT', {
        seen: 'kubeconfig cannot be read: not YAML',
        command: 'bootstrap prod   # its cluster-access step writes the kubeconfig again',
      }),
    },
  ],
  INTERRUPTED: { names: /Ctrl-C/, remedy: /--resume/, example: stop('INTERRUPTED', { seen: 'Ctrl-C' }) },

  // node-baseline: phases/node-baseline/*.ts
  TOOL_MISSING: {
    names: /apt-get install/,
    example: () => one('TOOL_MISSING', toolStops(server, ok(`missing ${Object.keys(HOST_TOOLS).at(-1)}\nchecked\n`))),
  },
  K3S_VERSION_MISMATCH: {
    names: /k3s\.version/,
    // phases/node-baseline/k3s-version.ts
    example: stop('K3S_VERSION_MISMATCH', { command: 'k3s --version', seen: 'the k3s binary is v1.32.0+k3s1, not v1.33.5+k3s1 (k3s.version)' }),
  },
  ARCH_UNSUPPORTED: {
    names: /the k3s binary is built for/,
    remedy: /k3s binary for the host architecture/,
    example: () => baseline('ARCH_UNSUPPORTED', { arch: ok('aarch64\n') }),
  },
  KERNEL_TOO_OLD: { names: /kernel/, example: () => baseline('KERNEL_TOO_OLD', { kernel: ok('5.4.0-150-generic\n') }) },
  CGROUP_V2_MISSING: { names: /cgroup/, example: () => baseline('CGROUP_V2_MISSING', { cgroupfs: ok('tmpfs\n') }) },
  BPFFS_MISSING: { names: /bpf/i, example: () => baseline('BPFFS_MISSING', { bpf: { stdout: '', stderr: '', code: 1 } }) },
  MODULE_MISSING: {
    names: /br_netfilter is not built in/,
    remedy: /modprobe <module>.*|The module named/,
    example: () => baseline('MODULE_MISSING', { br_netfilter: ok('absent\n') }),
  },
  CLOCK_SKEW: { names: /clock/, remedy: /time sync/, example: () => baseline('CLOCK_SKEW', { clock: ok(`${now + 30}\n`) }) },
  NO_DEFAULT_ROUTE: { names: /default route/, example: () => baseline('NO_DEFAULT_ROUTE', { route: ok('') }) },
  NIC_NOT_FOUND: [
    {
      names: /no interface holds 192\.168\.2\.10/,
      remedy: /the address in the inventory or on the host/,
      example: () => baseline('NIC_NOT_FOUND', { addrs: ok('1: lo    inet 127.0.0.1/8 scope host lo\n') }),
    },
    { names: /controlPlane\.interface/, example: () => baseline('NIC_NOT_FOUND', {}, 'eth9') },
  ],
  PORT_IN_USE: {
    names: /0\.0\.0\.0:2379 is held by etcd/,
    remedy: /the program the evidence names so that it frees the port/,
    example: () => baseline('PORT_IN_USE', { ports: ok('0.0.0.0:2379 users:(("etcd",pid=99,fd=3)) etcd.service\n') }),
  },
  DISK_LOW: { names: /\/var\/lib\/rancher/, example: () => baseline('DISK_LOW', { disk: ok('/dev/sda1 100000000000 1000 1000000 99% /\n') }) },
  DUPLICATE_HOST_IDENTITY: [
    { names: /\/etc\/machine-id/, example: () => identities('machineId') },
    { names: /product_uuid/, example: () => identities('productUuid') },
  ],

  // k3s-founder, k3s-join, agents: phases/k3s-founder.ts, phases/k3s/gates.ts, agent-gate.ts, src/k3s/journal-causes.ts
  EXISTING_CLUSTER_FOUND: {
    names: /datastore/,
    example: stop(
      'EXISTING_CLUSTER_FOUND',
      { command: 'test -d /var/lib/rancher/k3s/server/db/etcd', seen: 'k3s-prod-2 holds a k3s datastore; the founder k3s-prod-1 does not' },
      { host: 'k3s-prod-2' },
    ),
  },
  STATE_TOKEN_MISMATCH: { names: /state folder/, example: () => one('STATE_TOKEN_MISMATCH', tokenStops('k3s-prod-1', 'a'.repeat(64), 'b'.repeat(64))) },
  TOKEN_MALFORMED: { names: /cluster-token\.json/, example: () => captured(() => checkTokenForm({ secret: 'K10abc::server:pw' }, 'cluster-token.json')) },
  FOUNDER_API_NOT_READY: {
    names: /excerpt/,
    remedy: /the excerpt \(journalctl -u k3s on the founder\)/,
    example: stop(
      'FOUNDER_API_NOT_READY',
      { command: "k3s kubectl get --raw='/readyz'", exitCode: 1, seen: 'connection refused', excerpt: 'k3s[812]: … etcd: starting' },
      { host: 'k3s-prod-1' },
    ),
  },
  JOIN_FOUNDER_UNREACHABLE: { names: /6443/, example: () => journal('JOIN_FOUNDER_UNREACHABLE', 'failed to get CA certs') },
  TOKEN_CA_MISMATCH: {
    names: /token/,
    remedy: /token into the joiner's \/etc\/rancher\/k3s\/config\.yaml/,
    example: () => journal('TOKEN_CA_MISMATCH', 'token CA hash does not match'),
  },
  TOKEN_REJECTED: { names: /token/, example: () => journal('TOKEN_REJECTED', 'encrypted with different token') },
  // phases/k3s/dropins.ts dropinsChecked (the config step of k3s-founder, k3s-join, agents)
  K3S_DROPIN_OVERRIDES: { names: /config\.yaml\.d/, example: () => dropinOverride() },
  CRITICAL_CONFIG_MISMATCH: {
    names: /cluster-cidr/,
    remedy: /cluster-cidr: k3s\.clusterCidr/,
    example: () => journal('CRITICAL_CONFIG_MISMATCH', 'mismatched: ClusterIPRange.IP'),
  },
  ETCD_PEER_UNREACHABLE: { names: /2380/, example: () => journal('ETCD_PEER_UNREACHABLE', ':2380: connect: connection refused') },
  ETCD_CLUSTER_UNHEALTHY: { names: /unhealthy/, remedy: /healthy/, example: () => journal('ETCD_CLUSTER_UNHEALTHY', 'etcdserver: unhealthy cluster') },
  DUPLICATE_NODE_NAME: { names: /node name/, example: () => journal('DUPLICATE_NODE_NAME', 'duplicate node name found') },
  NODE_PASSWORD_REJECTED: [
    { names: /[Nn]ode password/, remedy: /node-password secret/, example: () => journal('NODE_PASSWORD_REJECTED', 'Node password rejected', 'worker-1') },
    // An agent cannot be replaced (modes/replace.ts refuses it): the remedy must not send it there alone.
    {
      names: /worker-1/,
      remedy: /sudo k3s kubectl delete node <name>/,
      example: () => journal('NODE_PASSWORD_REJECTED', 'Node password rejected', 'worker-1'),
    },
  ],
  ETCD_QUORUM_LOST: {
    names: /k3s-prod-2 and k3s-prod-3 are back/,
    remedy: /Bring the named servers back/,
    example: stop(
      'ETCD_QUORUM_LOST',
      {
        command: 'k3s kubectl get --raw /db/info (on each other server)',
        seen: 'k3s-prod-2: k3s is not active; k3s-prod-3: no answer; k3s-prod-4: etcdserver: unhealthy cluster',
      },
      {
        host: 'k3s-prod-2, k3s-prod-3',
        message: 'etcd has lost quorum: 1 of its 3 members answer, 2 are needed; k3s-prod-4 cannot join until k3s-prod-2 and k3s-prod-3 are back',
      },
    ),
  },
  LEARNER_NOT_PROMOTED: {
    names: /EtcdIsVoter is False/,
    remedy: /learner/,
    example: stop('LEARNER_NOT_PROMOTED', { command: 'k3s kubectl get node k3s-prod-2', seen: 'EtcdIsVoter is False', excerpt: '…' }, { host: 'k3s-prod-2' }),
  },
  JOIN_STALLED: {
    names: /excerpt/,
    example: stop(
      'JOIN_STALLED',
      { command: 'k3s kubectl get node k3s-prod-2', seen: 'k3s-prod-2 is not registered as a node', excerpt: '…' },
      { host: 'k3s-prod-2' },
    ),
  },
  AGENT_NOT_REGISTERED: {
    names: /k3s-agent|Node worker-1/,
    remedy: /journalctl -u k3s-agent on the agent/,
    example: stop(
      'AGENT_NOT_REGISTERED',
      { command: 'k3s kubectl get node,lease worker-1', seen: 'no Node worker-1 yet', excerpt: 'k3s-agent[411]: Waiting to retrieve agent configuration' },
      { host: 'worker-1' },
    ),
  },

  // --replace: phases/k3s/replace-*.ts
  QUORUM_AT_RISK: {
    names: /other servers/,
    example: stop(
      'QUORUM_AT_RISK',
      { command: "k3s kubectl get --raw='/readyz' on each other server", seen: 'k3s-prod-1: API ready; k3s-prod-2: no answer' },
      { host: 'k3s-prod-3', message: 'Only 1 of the other servers answer; 2 of 3 etcd members are needed to replace k3s-prod-3' },
    ),
  },
  // bootstrap <env> --reset: cli/reset-command.ts confirmReset (its stop as a test raises it: test/unit/reset.test.ts)
  RESET_NOT_CONFIRMED: {
    names: /environment's name/,
    example: stop('RESET_NOT_CONFIRMED', { seen: 'typed "prd", not the environment\'s name "prod"' }, { message: '"prd" is not prod: nothing changed' }),
  },
  ETCD_MEMBER_NOT_REMOVED: {
    names: /\/db\/info/,
    example: stop(
      'ETCD_MEMBER_NOT_REMOVED',
      { command: 'k3s kubectl delete node k3s-prod-3 (on k3s-prod-1); k3s kubectl get --raw /db/info', seen: 'the member k3s-prod-3-1a2b3c4d is still listed' },
      { host: 'k3s-prod-3' },
    ),
  },

  // --remove: phases/k3s/remove-steps.ts waitGone
  NODE_NOT_REMOVED: {
    names: /node-password\.k3s/,
    example: stop(
      'NODE_NOT_REMOVED',
      {
        command: 'k3s kubectl delete node worker-2 (on k3s-prod-1); k3s kubectl get node, secret -n kube-system worker-2.node-password.k3s',
        seen: 'Secret kube-system/worker-2.node-password.k3s still there',
      },
      { host: 'worker-2' },
    ),
  },

  // kube-vip: phases/kube-vip/*.ts
  VIP_INTERFACE_INVALID: {
    names: /controlPlane\.interface/,
    example: () =>
      one(
        'VIP_INTERFACE_INVALID',
        chooseVipInterface('auto', [
          { host: 'k3s-prod-1', nic: 'eth0' },
          { host: 'k3s-prod-2', nic: 'ens18' },
        ] as never).stops,
      ),
  },
  KUBE_VIP_RBAC_MISSING: {
    names: /system:kube-vip-role/,
    example: stop('KUBE_VIP_RBAC_MISSING', {
      command: 'kubectl get clusterrole system:kube-vip-role',
      exitCode: 1,
      seen: 'Error from server (NotFound): clusterroles.rbac.authorization.k8s.io "system:kube-vip-role" not found',
    }),
  },
  KUBE_VIP_SERVICE_HOST_DEADLOCK: {
    names: /10\.43\.0\.1:443/,
    remedy: /KUBERNETES_SERVICE_HOST=127\.0\.0\.1/,
    example: () =>
      logStop(
        matchKubeVipLog(
          'E1201 12:00:00 leaderelection.go:336] error retrieving resource lock kube-system/plndr-cp-lock: Get "https://10.43.0.1:443/apis/coordination.k8s.io/v1/namespaces/kube-system/leases/plndr-cp-lock": dial tcp 10.43.0.1:443: i/o timeout',
          '10.43.0.1',
        ),
      ),
  },
  VIP_LEASE_NOT_HELD: {
    names: /plndr-cp-lock/,
    remedy: /on a server .*sudo k3s kubectl/,
    example: stop(
      'VIP_LEASE_NOT_HELD',
      {
        command: 'kubectl get lease -n kube-system plndr-cp-lock',
        seen: 'no holder; https://192.168.2.9:6443/livez: connection refused',
        excerpt: '(no kube-vip log)',
      },
      { host: 'k3s-prod-1' },
    ),
  },
  VIP_NOT_ANSWERING: [
    {
      names: /192\.168\.2\.9:6443/,
      remedy: /https:\/\/<vip>:6443/,
      example: stop(
        'VIP_NOT_ANSWERING',
        { command: 'k3s kubectl --server https://192.168.2.9:6443 get --raw /livez', exitCode: 1, seen: 'the lease is held by k3s-prod-1, but i/o timeout' },
        { host: 'k3s-prod-2' },
      ),
    },
    // phases/k3s/agent-gate.ts: an agent's "failed to get CA certs" names the VIP; an agent has no admin kubeconfig.
    {
      names: /k3s-agent/,
      remedy: /from an agent.*\/dev\/tcp/,
      example: stop(
        'VIP_NOT_ANSWERING',
        { command: 'journalctl -u k3s-agent.service', seen: 'failed to get CA certs: dial tcp 192.168.2.9:6443: i/o timeout' },
        { host: 'worker-1' },
      ),
    },
  ],
  VIP_CERT_MISSING_SAN: {
    names: /certificate/,
    example: stop('VIP_CERT_MISSING_SAN', {
      command: 'TLS handshake to 192.168.2.9:6443',
      seen: 'x509: certificate is valid for 10.43.0.1, 192.168.2.10, not 192.168.2.9',
    }),
  },

  // cilium: phases/cilium/*.ts, src/gitops/*.ts
  GITOPS_SOURCE_INVALID: [
    {
      names: /platform\/cilium\/helmrelease\.yaml/,
      remedy: /the named file/,
      example: stop('GITOPS_SOURCE_INVALID', { seen: 'platform/cilium/helmrelease.yaml: not valid YAML: bad indentation' }),
    },
    // src/gitops/values-source.ts: the HelmRelease file itself is not there.
    {
      names: /HelmRelease file does not exist/,
      remedy: /cilium\.helmRelease/,
      example: stop('GITOPS_SOURCE_INVALID', { seen: 'platform/cilium/helmrelease.yaml: the HelmRelease file does not exist or cannot be read' }),
    },
  ],
  UNRESOLVED_SUBSTITUTION: {
    names: /cluster-vars|variables .*read from/,
    remedy: /cluster-vars/,
    example: stop('UNRESOLVED_SUBSTITUTION', {
      seen: 'K3S_API_HOST is not defined',
      excerpt: 'platform/cilium/helmrelease.yaml: spec.values.k8sServiceHost: "${K3S_API_HOST}"\nvariables read from: clusters/prod/cluster-vars.yaml',
    }),
  },
  CHART_VERSION_MISMATCH: {
    names: /pins/,
    remedy: /pinned version/,
    example: () => one('CHART_VERSION_MISMATCH', checkChartVersion('1.19.5', { name: 'cilium', version: '1.18.0' }, 'cilium-1.18.0.tgz')),
  },
  SERVICE_HOST_NOT_VIP: { names: /k8sServiceHost/, example: () => values('SERVICE_HOST_NOT_VIP') },
  SERVICE_PORT_MISMATCH: { names: /k8sServicePort/, example: () => values('SERVICE_PORT_MISMATCH') },
  KPR_MISMATCH: [
    { names: /kubeProxyReplacement/, example: () => values('KPR_MISMATCH') },
    // phases/verify/checks.ts: the running agent, not the template.
    {
      names: /running Cilium agent/,
      remedy: /running agent/,
      example: stop(
        'KPR_MISMATCH',
        { command: 'cilium-dbg status -o json', seen: 'kube-proxy replacement False' },
        { host: 'k3s-prod-2', message: 'The running Cilium agent on k3s-prod-2 does not replace kube-proxy' },
      ),
    },
  ],
  POD_CIDR_MISMATCH: { names: /clusterPoolIPv4PodCIDRList/, example: () => values('POD_CIDR_MISMATCH') },
  ROLLOUT_TOO_WIDE: { names: /maxUnavailable/, example: () => values('ROLLOUT_TOO_WIDE') },
  CGROUP_HOSTROOT_NOT_CGROUP2: {
    names: /cgroup\.hostRoot/,
    example: stop(
      'CGROUP_HOSTROOT_NOT_CGROUP2',
      {
        command: 'stat -fc %T /run/cilium/cgroupv2',
        excerpt: 'spec.values.cgroup.hostRoot: /run/cilium/cgroupv2',
        seen: '/run/cilium/cgroupv2 is absent, not cgroup2fs',
      },
      { host: 'k3s-prod-1' },
    ),
  },
  VALUES_SCHEMA_INVALID: {
    names: /spec\.values\.debug\.enabled/,
    remedy: /the value at the path named/,
    example: () =>
      one(
        'VALUES_SCHEMA_INVALID',
        checkValuesSchema(
          { debug: { enabled: 'yes' } },
          { type: 'object', properties: { debug: { type: 'object', properties: { enabled: { type: 'boolean' } } } } },
        ),
      ),
  },
  CILIUM_SERVICE_HOST_FALLBACK: {
    names: /10\.43\.0\.1:443/,
    remedy: /k8sServiceHost/,
    example: () =>
      logStop(
        matchCiliumAgentLog(
          'level=error msg="Unable to contact k8s api-server" error="Get \\"https://10.43.0.1:443/version\\": dial tcp 10.43.0.1:443: i/o timeout"',
          '10.43.0.1',
        ),
      ),
  },
  CILIUM_API_UNREACHABLE: {
    names: /192\.168\.2\.9:6443/,
    remedy: /the address it dials/,
    example: () =>
      logStop(
        matchCiliumAgentLog(
          'level=error msg="Unable to contact k8s api-server" ipAddr="https://192.168.2.9:6443" error="dial tcp 192.168.2.9:6443: connect: connection refused"',
          '10.43.0.1',
        ),
      ),
  },
  CILIUM_NODE_UNREACHABLE: {
    names: /4240\/tcp/,
    example: stop(
      'CILIUM_NODE_UNREACHABLE',
      {
        command: 'cilium-health status',
        seen: 'k3s-prod-1 → k3s-prod-2 (192.168.2.11, node): connection timed out; open 4240/tcp and 8472/udp between them (probed 2026-12-07T19:03:05Z)',
      },
      { host: 'k3s-prod-1' },
    ),
  },
  CILIUM_HEALTH_NOT_REPORTED: {
    names: /cilium-health status/,
    // phases/verify/checks.ts judgeHealth: a report without a result for a node.
    example: stop(
      'CILIUM_HEALTH_NOT_REPORTED',
      {
        command: 'k3s crictl exec --name cilium-agent --state running -q cilium-health status -o json',
        seen: 'Cilium on k3s-prod-1 has no result for k3s-prod-3 yet (its report of 2026-12-07T19:03:02Z, a probe round every 1m57.5s)',
      },
      { host: 'k3s-prod-1' },
    ),
  },
  CILIUM_AGENTS_NOT_READY: [
    {
      names: /agents Ready/,
      remedy: /agent logs/,
      example: stop(
        'CILIUM_AGENTS_NOT_READY',
        { command: 'kubectl get pods -n kube-system -l k8s-app=cilium', seen: '2 of 3 agents Ready; not Ready: cilium-x7 on k3s-prod-3' },
        { host: 'k3s-prod-3' },
      ),
    },
    // phases/cilium/rollout-gate.ts: the HelmChart this run wrote was not installed.
    {
      names: /helm-install-cilium/,
      remedy: /job\/helm-install-<release>/,
      example: stop('CILIUM_AGENTS_NOT_READY', {
        command: 'kubectl get secrets -n kube-system -l owner=helm,name=cilium -L version,status; kubectl get jobs -n kube-system helm-install-cilium',
        seen: 'no revision newer than 3 deployed',
      }),
    },
  ],
  NODE_NOT_READY: [
    {
      names: /not Ready/,
      remedy: /describe node <name>/,
      example: stop(
        'NODE_NOT_READY',
        { command: 'kubectl get nodes', seen: 'k3s-prod-2 not Ready: container runtime network not ready' },
        { host: 'k3s-prod-2' },
      ),
    },
    {
      names: /worker-1/,
      remedy: /k3s-agent on an agent/,
      example: stop(
        'NODE_NOT_READY',
        { command: 'kubectl get nodes', seen: 'worker-1: NotReady' },
        { host: 'worker-1', message: 'Node worker-1 is not Ready' },
      ),
    },
  ],
  AGENT_SERVICE_HOST_DRIFT: {
    names: /agent cilium-abc dials/,
    remedy: /named agent pods/,
    example: () =>
      one(
        'AGENT_SERVICE_HOST_DRIFT',
        checkAgentServiceHost([{ name: 'cilium-abc', node: 'k3s-prod-2', env: { KUBERNETES_SERVICE_HOST: '192.168.2.11' } }], '192.168.2.9', 6443, '10.43.0.1'),
      ),
  },

  // verify: phases/verify/*.ts
  ETCD_MEMBERS_MISMATCH: {
    names: /\/db\/info/,
    example: stop(
      'ETCD_MEMBERS_MISMATCH',
      { command: 'k3s kubectl get --raw /db/info (on k3s-prod-1); kubectl get nodes (EtcdIsVoter)', seen: 'missing: k3s-prod-3 (a learner)' },
      { host: 'k3s-prod-3' },
    ),
  },
  // phases/verify/checks.ts strangerError
  NODE_NOT_IN_INVENTORY: {
    names: /k3s-prod-4/,
    remedy: /delete node <name>.*node-password\.k3s/,
    example: stop(
      'NODE_NOT_IN_INVENTORY',
      { command: 'kubectl get nodes', seen: 'k3s-prod-4: a server Node not in the inventory (Ready=Unknown, last report 2026-12-01T09:12:44Z)' },
      { host: 'k3s-prod-4' },
    ),
  },
  API_UNREACHABLE_VIA: {
    names: /readyz/,
    example: stop(
      'API_UNREACHABLE_VIA',
      {
        command: 'k3s kubectl --server https://192.168.2.9:6443 get --raw /readyz --request-timeout=5s',
        seen: 'https://192.168.2.9:6443/readyz from k3s-prod-2: i/o timeout',
      },
      { host: 'k3s-prod-1' },
    ),
  },
  COREDNS_NOT_READY: {
    names: /coredns/,
    example: stop(
      'COREDNS_NOT_READY',
      { command: 'kubectl get deployment -n kube-system coredns -o json', seen: 'coredns: 0 of 1 replicas ready' },
      { host: 'k3s-prod-1' },
    ),
  },
  FAILOVER_FAILED: [
    {
      names: /VIP did not move/,
      remedy: /kube-vip logs from another server/,
      example: stop(
        'FAILOVER_FAILED',
        { command: 'systemctl stop k3s (on k3s-prod-1); then from the other servers: …', seen: 'no other server holds the lease' },
        { host: 'k3s-prod-1', message: 'The VIP did not move from k3s-prod-1 within 35 s (lease 15 s plus a margin)' },
      ),
    },
    {
      names: /one server/,
      remedy: /single-server inventory/,
      example: stop(
        'FAILOVER_FAILED',
        { seen: 'the inventory has one server: there is no other server to take the VIP' },
        { host: 'k3s-prod-1', message: 'A single server cannot fail over' },
      ),
    },
  ],

  // flux: phases/flux.ts, phases/flux/*.ts
  FLUX_INSTALL_INVALID: {
    names: /flux install --export/,
    example: stop('FLUX_INSTALL_INVALID', {
      seen: 'defines no CustomResourceDefinition for GitRepository',
      command: 'flux install --export > flux-install.yaml',
    }),
  },
  FLUX_DEPLOY_KEY_UNUSABLE: {
    names: /deploy-key/,
    remedy: /flux\.deployKeyFile/,
    example: stop(
      'FLUX_DEPLOY_KEY_UNUSABLE',
      { seen: 'prod-deploy-key is protected by a passphrase' },
      { message: 'prod-deploy-key is protected by a passphrase' },
    ),
  },
  FLUX_CRDS_NOT_ESTABLISHED: {
    names: /CRD/,
    remedy: /crd <name>/,
    example: stop('FLUX_CRDS_NOT_ESTABLISHED', {
      command: 'k3s kubectl wait --for condition=established crd …',
      seen: 'kubectl wait ran out before every CRD had the condition Established=True',
    }),
  },
  FLUX_CONTROLLER_CRASHLOOP: {
    names: /feature-gate|unable to load feature gates/,
    remedy: /unable to load feature gates/,
    example: stop('FLUX_CONTROLLER_CRASHLOOP', {
      command: 'kubectl -n flux-system logs source-controller-abc -c manager --previous',
      seen: 'container manager of pod flux-system/source-controller-abc waiting CrashLoopBackOff',
      excerpt: "unable to load feature gates: feature-gate 'Foo' not supported",
    }),
  },
  FLUX_SOURCE_NOT_READY: {
    names: /GitRepository/,
    remedy: /deploy key/,
    example: stop('FLUX_SOURCE_NOT_READY', { seen: 'GitRepository flux-system/flux-system is not Ready: AuthenticationFailed: ssh: unable to authenticate' }),
  },
  FLUX_DEPENDENCY_NOT_READY: [
    {
      names: /the root/,
      remedy: /kustomization <root>/,
      example: stop('FLUX_DEPENDENCY_NOT_READY', {
        seen: 'Kustomization flux-system/apps waits on Kustomization flux-system/infra, the root, which is not Ready: BuildFailed: …',
      }),
    },
    // phases/flux/root-cause.ts: a dependsOn naming a Kustomization that does not exist.
    {
      names: /does not exist/,
      remedy: /does not exist: add it, or fix the dependsOn name/,
      example: stop('FLUX_DEPENDENCY_NOT_READY', { seen: 'Kustomization flux-system/infra does not exist, and Kustomization flux-system/apps depends on it' }),
    },
  ],
  FLUX_CRD_NOT_INSTALLED: {
    names: /no matches for kind/,
    remedy: /custom resource .* CRD/,
    example: stop('FLUX_CRD_NOT_INSTALLED', {
      seen: 'Kustomization flux-system/platform-config is not Ready: ReconciliationFailed: no matches for kind "CDI" in version "cdi.kubevirt.io/v1beta1"',
    }),
  },
  FLUX_SUBSTITUTION_FAILED: {
    names: /variable/,
    example: stop('FLUX_SUBSTITUTION_FAILED', { seen: 'Kustomization flux-system/apps is not Ready: BuildFailed: variable not set (strict mode): "DOMAIN"' }),
  },
  FLUX_HEALTHCHECK_FAILED: {
    names: /objects? .*not ready|HealthCheckFailed/,
    remedy: /objects the message names/,
    example: stop('FLUX_HEALTHCHECK_FAILED', {
      seen: 'Kustomization flux-system/apps is not Ready: HealthCheckFailed: Deployment/apps/web status: InProgress; objects not ready',
    }),
  },
  FLUX_BUILD_FAILED: {
    names: /kustomize build|BuildFailed/,
    remedy: /kustomize build/,
    example: stop('FLUX_BUILD_FAILED', { seen: 'Kustomization flux-system/apps is not Ready: BuildFailed: kustomize build failed: accumulating resources' }),
  },
  FLUX_RECONCILIATION_FAILED: [
    {
      names: /Kustomization/,
      remedy: /kustomization <name>/,
      example: stop('FLUX_RECONCILIATION_FAILED', { seen: 'Kustomization flux-system/apps is not Ready: ReconciliationFailed: …' }),
    },
    // phases/flux/ready-wait.ts: nothing became Ready at all.
    {
      names: /controllers may not run/,
      remedy: /controllers run/,
      example: stop('FLUX_RECONCILIATION_FAILED', {
        seen: 'no GitRepository or Kustomization of Flux was seen Ready within the budget (the Flux controllers may not run)',
      }),
    },
  ],
  FLUX_HELMRELEASE_NOT_READY: {
    names: /HelmRelease/i,
    remedy: /helmrelease <name>/,
    example: stop('FLUX_HELMRELEASE_NOT_READY', {
      command: 'kubectl get helmreleases.helm.toolkit.fluxcd.io -n kube-system cilium -o json',
      seen: 'HelmRelease kube-system/cilium is not Ready: UpgradeFailed: …',
    }),
  },
  HELMCHART_NOT_GONE: {
    names: /finalizers/,
    remedy: /finalizer/,
    example: stop('HELMCHART_NOT_GONE', { seen: 'HelmChart kube-system/cilium is still there and Terminating, held by the finalizers [example.com/hold]' }),
  },
  CILIUM_PARITY_DRIFT: {
    names: /HelmRelease/,
    example: stop('CILIUM_PARITY_DRIFT', {
      command: 'kubectl get helmrelease -n kube-system cilium -o jsonpath={.spec.values}',
      seen: 'the HelmRelease values differ at k8sServiceHost',
    }),
  },

  // images: src/images/*.ts
  IMAGE_ARCHIVE_INVALID: {
    names: /sha256/,
    example: stop('IMAGE_ARCHIVE_INVALID', { command: 'sha256sum images/cilium.tar', seen: 'its sha256 is 1234, the inventory says abcd' }),
  },
  IMAGE_NOT_IN_ARCHIVES: {
    names: /image archives/,
    remedy: /k3s\.imageArchives/,
    example: stop('IMAGE_NOT_IN_ARCHIVES', {
      command: 'tar -xOf <archive> index.json (or manifest.json)',
      seen: 'cilium pulls quay.io/cilium/cilium:v1.19.5, which is in none of the image archives (cilium.tar)',
    }),
  },
  IMAGE_NOT_AVAILABLE: {
    names: /k3s\.imageArchives/,
    example: stop(
      'IMAGE_NOT_AVAILABLE',
      { seen: 'pod kube-system/cilium-x on worker-1: container cilium-agent waiting ImagePullBackOff' },
      { host: 'worker-1', message: 'quay.io/cilium/cilium:v1.19.5 is not on worker-1 and cannot be pulled: add an archive holding it to k3s.imageArchives' },
    ),
  },

  // backup and restore: src/backup/*.ts, phases/k3s/restore-*.ts
  BACKUP_NOT_FOUND: {
    names: /manifest\.json/,
    remedy: /--list/,
    example: stop('BACKUP_NOT_FOUND', { command: 'ls backups/2026-11-30', seen: 'no manifest.json in backups/2026-11-30' }),
  },
  BACKUP_TOKEN_MISSING: { names: /cluster token|cluster-token\.json/, remedy: /cluster-token\.json/, example: () => backupStop('BACKUP_TOKEN_MISSING') },
  SNAPSHOT_CHECKSUM_MISMATCH: { names: /sha256/, example: () => backupStop('SNAPSHOT_CHECKSUM_MISMATCH') },
  SNAPSHOT_VERSION_NEWER: { names: /k3s v1\.34\.1\+k3s1/, remedy: /k3s\.version/, example: () => backupStop('SNAPSHOT_VERSION_NEWER') },
  RESTORE_TOKEN_CONFLICT: { names: /cluster-token\.json/, example: () => backupStop('RESTORE_TOKEN_CONFLICT') },
  CLUSTER_RESET_FAILED: {
    names: /excerpt/,
    example: stop(
      'CLUSTER_RESET_FAILED',
      { command: 'k3s server --cluster-reset --cluster-reset-restore-path=…', exitCode: 1, seen: 'fatal', excerpt: '… fatal' },
      { host: 'k3s-prod-1' },
    ),
  },
  BACKUP_FAILED: {
    names: /etcd-snapshot/,
    remedy: /--server NAME/,
    example: stop(
      'BACKUP_FAILED',
      { command: 'k3s etcd-snapshot save --name bootstrap-backup', exitCode: 1, seen: 'no space left on device' },
      { host: 'k3s-prod-1' },
    ),
  },
  RESTORE_INCOMPLETE: {
    names: /missing/,
    example: stop(
      'RESTORE_INCOMPLETE',
      { command: 'k3s kubectl get <every listable type> -A', seen: '2 missing: ConfigMap/apps/web, Secret/apps/db' },
      { host: 'k3s-prod-1', message: "2 of the backup's 140 objects are missing after the restore" },
    ),
  },

  // connecting: src/transport/*.ts
  SSH_UNREACHABLE: [
    {
      names: /SSH port/,
      remedy: /address and port in the inventory/,
      example: stop(
        'SSH_UNREACHABLE',
        { command: 'ssh -v -p 22 ops@192.168.2.10 true', seen: 'ECONNREFUSED: connect ECONNREFUSED 192.168.2.10:22' },
        { host: 'k3s-prod-1', message: 'k3s-prod-1 (192.168.2.10:22) does not answer on its SSH port' },
      ),
    },
    {
      names: /does not resolve/,
      remedy: /must resolve/,
      example: stop(
        'SSH_UNREACHABLE',
        { command: 'getent hosts k3s-prod-1.lan', seen: 'ENOTFOUND: getaddrinfo ENOTFOUND k3s-prod-1.lan' },
        { host: 'k3s-prod-1', message: 'k3s-prod-1.lan does not resolve' },
      ),
    },
    {
      names: /jump host/,
      remedy: /jump host/,
      example: stop(
        'SSH_UNREACHABLE',
        {
          command: 'ssh -J ops@192.168.2.1:2222 -p 22 ops@192.168.2.10 true',
          seen: 'the jump host bastion could not open a TCP stream to 192.168.2.10:22: connection refused',
        },
        { host: 'k3s-prod-1' },
      ),
    },
  ],
  SSH_HANDSHAKE_FAILED: {
    names: /ssh -v/,
    example: stop(
      'SSH_HANDSHAKE_FAILED',
      { command: 'ssh -v -p 22 ops@192.168.2.10 true', seen: 'no matching key exchange algorithm' },
      { host: 'k3s-prod-1' },
    ),
  },
  HOST_KEY_UNKNOWN: {
    names: /ssh-keyscan/,
    example: stop(
      'HOST_KEY_UNKNOWN',
      { command: 'ssh-keyscan -p 22 -t ed25519 192.168.2.10 >> ~/.ssh/known_hosts', excerpt: 'ssh-ed25519 SHA256:abc', seen: 'first contact' },
      { host: 'k3s-prod-1' },
    ),
  },
  HOST_KEY_MISMATCH: {
    names: /known_hosts/i,
    example: stop(
      'HOST_KEY_MISMATCH',
      { command: 'ssh-keygen -R 192.168.2.10 -f ~/.ssh/known_hosts', seen: 'the host presented another key' },
      { host: 'k3s-prod-1', message: 'host key of 192.168.2.10:22 differs from ~/.ssh/known_hosts line 3' },
    ),
  },
  SSH_IDENTITY_UNUSABLE: {
    names: /identity file|ssh-keygen -y/,
    remedy: /ssh\.identityFile/,
    example: stop(
      'SSH_IDENTITY_UNUSABLE',
      { command: 'ssh-keygen -y -f ~/.ssh/id_ed25519', seen: '~/.ssh/id_ed25519 is protected by a passphrase' },
      { host: 'k3s-prod-1', message: 'identity file ~/.ssh/id_ed25519 is protected by a passphrase' },
    ),
  },
  SSH_AUTH_FAILED: {
    names: /user ops/,
    remedy: /ssh\.user/,
    example: stop(
      'SSH_AUTH_FAILED',
      { command: 'ssh -v -p 22 ops@192.168.2.10 true', seen: 'user ops: the host accepted none of: identity file ~/.ssh/id_ed25519' },
      { host: 'k3s-prod-1' },
    ),
  },
  SUDO_NEEDS_PASSWORD: {
    names: /sudo/,
    example: stop('SUDO_NEEDS_PASSWORD', { command: 'sudo -n true', seen: '`sudo -n true` exited 1: sudo wants a password' }, { host: 'k3s-prod-1' }),
  },
  SSH_FORWARD_FAILED: {
    names: /direct-tcpip/,
    remedy: /TCP forwarding/,
    example: stop(
      'SSH_FORWARD_FAILED',
      {
        command: 'ssh -p 22 ops@192.168.2.10 ss -tln',
        seen: 'direct-tcpip to 127.0.0.1:6443 from k3s-prod-1: (SSH) Channel open failure: administratively prohibited',
      },
      { host: 'k3s-prod-1' },
    ),
  },

  // bootstrap kubeconfig: cli/kubeconfig-command.ts
  KUBECONFIG_NOT_FETCHED: {
    names: /does not exist/,
    remedy: /bootstrap <env>/,
    example: stop(
      'KUBECONFIG_NOT_FETCHED',
      { seen: 'the state folder kubeconfig does not exist' },
      { message: 'No kubeconfig for prod in its state folder yet' },
    ),
  },
  KUBECONFIG_CA_MISMATCH: {
    names: /unable to verify the first certificate/,
    remedy: /BOOTSTRAP_STATE_DIR/,
    example: stop(
      'KUBECONFIG_CA_MISMATCH',
      {
        command: 'k3s kubectl get nodes -o json',
        seen: 'k3s-prod-1: GET /api/v1/nodes: unable to verify the first certificate; k3s-prod-2: GET /api/v1/nodes: unable to verify the first certificate',
      },
      { host: 'k3s-prod-1', message: "no server's API certificate is verified by the state folder's kubeconfig: it is another cluster's" },
    ),
  },
  KUBECONFIG_MERGE_REFUSED: {
    names: /another cluster/,
    remedy: /--context NAME/,
    example: stop(
      'KUBECONFIG_MERGE_REFUSED',
      { seen: 'cluster prod has another CA' },
      { message: '~/.kube/config already holds "prod" for another cluster, or is no kubeconfig' },
    ),
  },

  // a rolling change: src/k3s/upgrade-path.ts (pure), phases/k3s/rolling-gates.ts
  K3S_DOWNGRADE_REFUSED: {
    names: /k3s\.version/,
    example: () => pathStops([runningAt('k3s-prod-1', 'v1.33.7+k3s3', '3.5.26')], { version: 'v1.33.5+k3s1', etcd: '3.5.21' })[0],
  },
  K3S_MINOR_SKIPPED: {
    names: /upgrade through/i,
    example: () =>
      pathStops([runningAt('k3s-prod-1', 'v1.32.9+k3s1', '3.5.21')], { version: 'v1.34.1+k3s1', etcd: '3.6.4' }).find(
        (s) => s.causeId === 'K3S_MINOR_SKIPPED',
      )!,
  },
  ETCD_WAYPOINT_REQUIRED: {
    names: /3\.5\.26/,
    example: () => pathStops([runningAt('k3s-prod-1', 'v1.33.5+k3s1', '3.5.21')], { version: 'v1.34.1+k3s1', etcd: '3.6.4' })[0],
  },
  ETCD_VERSION_UNKNOWN: {
    names: /etcd-version/,
    example: () => pathStops([runningAt('k3s-prod-1', 'v1.33.5+k3s1')], { version: 'v1.34.1+k3s1', etcd: '3.6.4' })[0],
  },
  K3S_VERSION_UNKNOWN: {
    names: /k3s --version/,
    example: () => pathStops([{ host: 'k3s-prod-1', versionLine: '' }], { version: 'v1.33.7+k3s3', etcd: '3.5.26' })[0],
  },
  // phases/k3s/install-steps.ts restartsK3s
  RESTART_NEEDS_ROLLING: {
    names: /rolling-servers/,
    example: () => restartOutsideRolling(),
  },
  ROLLING_SERVER_NOT_BACK: {
    names: /journalctl -u k3s/,
    example: stop(
      'ROLLING_SERVER_NOT_BACK',
      { command: "k3s kubectl get --raw='/readyz'; journalctl -u k3s", seen: "k3s-prod-2's API: The connection to the server 127.0.0.1:6443 was refused" },
      { host: 'k3s-prod-2' },
    ),
  },

  // draining a node: src/k3s/drain.ts (its budget's end), src/kube/drain-client.ts (an API failure)
  DRAIN_BLOCKED: {
    names: /get pdb web/,
    remedy: /get pdb NAME/,
    example: stop(
      'DRAIN_BLOCKED',
      {
        command: 'kubectl -n shop get pdb web -o wide',
        seen: "eviction of shop/web-7d4b9-x2x8q: HTTP 429 Cannot evict pod as it would violate the pod's disruption budget. The disruption budget web needs 2 healthy pods and has 2 currently",
      },
      { host: 'k3s-prod-2', message: 'pod shop/web-7d4b9-x2x8q on k3s-prod-2 is held by PodDisruptionBudget shop/web: not evicted within 300 s' },
    ),
  },
  DRAIN_TIMEOUT: {
    names: /shop\/db-0/,
    remedy: /describe pod NAME/,
    example: stop(
      'DRAIN_TIMEOUT',
      { command: 'kubectl get pods -A --field-selector spec.nodeName=k3s-prod-2 -o wide', seen: 'still there: shop/db-0' },
      { host: 'k3s-prod-2', message: '1 evicted pod(s) still on k3s-prod-2 after 300 s: shop/db-0' },
    ),
  },
  KUBE_API_FAILED: {
    names: /HTTP 403/,
    remedy: /401 or 403/,
    example: stop(
      'KUBE_API_FAILED',
      { command: 'kubectl get node k3s-prod-2 -o yaml', seen: 'PATCH /api/v1/nodes/k3s-prod-2: HTTP 403 nodes "k3s-prod-2" is forbidden' },
      { host: 'k3s-prod-2', message: 'the Kubernetes API answered HTTP 403 to PATCH /api/v1/nodes/k3s-prod-2: nodes "k3s-prod-2" is forbidden' },
    ),
  },
};

/** The stop a log matcher names, as the gate that read the log throws it. */
function logStop(m: { causeId: CauseId; line: string } | undefined): CauseError {
  if (!m) throw new Error('the log matcher named nothing');
  return new CauseError(m.causeId, { host: 'k3s-prod-1', evidence: { command: 'kubectl logs …', seen: m.line } });
}

/** The CauseError a check throws. */
function captured(f: () => unknown): CauseError {
  try {
    f();
  } catch (err) {
    if (err instanceof CauseError) return err;
    throw err;
  }
  throw new Error('nothing was thrown');
}

/** Everything of a stop the operator reads before `do:` (src/view/format.ts), and the remedy after it. */
function read(id: CauseId, ex: Example): { evidence: string; remedy: string } {
  if (ex instanceof CauseError) {
    expect(ex.causeId, 'the example is a stop of its row').toBe(id);
    const e = ex.evidence;
    return {
      evidence: [ex.message, ex.host && `on ${ex.host}`, e.seen, e.command, e.excerpt && `excerpt: ${e.excerpt}`].filter(Boolean).join('\n'),
      remedy: ex.remedy,
    };
  }
  expect(ex.id, 'the example is a violation of its row').toBe(id);
  return { evidence: `${ex.path} ${ex.message}`, remedy: causeInfo(id).remedy };
}

describe("each cause's remedy names what its evidence names", () => {
  it('has a row for every cause of the catalogue, and none for a cause it lacks', () => {
    const ids = allCauses().map((c) => c.id);
    expect(
      ids.filter((id) => !Object.hasOwn(rows, id)),
      'causes without a row',
    ).toEqual([]);
    expect(
      Object.keys(rows).filter((id) => !ids.includes(id as CauseId)),
      'rows of no cause',
    ).toEqual([]);
  });

  const cases = (Object.entries(rows) as [CauseId, Row | Row[]][]).flatMap(([id, r]) =>
    [r].flat().map((row, i, all) => [all.length > 1 ? `${id} (${i + 1})` : id, id, row] as const),
  );

  it.each(cases)('%s', (_name, id, row) => {
    const { evidence, remedy } = read(id, row.example());
    expect(evidence, `${id}: the example's evidence names ${row.names}`).toMatch(row.names);
    expect(remedy, `${id}: the remedy names ${row.remedy ?? row.names}`).toMatch(row.remedy ?? row.names);
  });

  it('fails a remedy that does not fit (the check is not a tautology)', () => {
    // PORT_IN_USE's remedy as it read before issue 16: it named the program, never the port.
    const stale = 'Stop or reconfigure the program named in the evidence (ss -ltnp shows it), then rerun.';
    const row = rows.PORT_IN_USE as Row;
    expect(stale).not.toMatch(row.remedy!);
    // A remedy of another cause fits none of the rows that name a specific thing.
    expect(causeInfo('DISK_LOW').remedy).not.toMatch((rows.MODULE_MISSING as Row).remedy!);
  });
});
