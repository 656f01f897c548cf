// The one source of the inventory v1 schema. inventory/schema.json (for editors) is generated from
// it: `npx tsx src/inventory/write-schema.ts`; a unit test fails when the committed file drifts.
// Defaults live here (`default`) and nowhere else; ajv fills them in after the shape is checked.
//
// NOTE: names carry no pattern here on purpose: a bad name is NAME_INVALID (contracts.ts), a cause
// of its own, not a generic schema violation. Likewise waiver ids and reasons (WAIVER_INVALID).
import { WAIVABLE_CAUSES } from './waivers.ts';

const ipv4 = { type: 'string', format: 'ipv4', description: 'An IPv4 address, e.g. 192.168.2.10' } as const;
const cidr = { type: 'string', format: 'ipv4-cidr', description: 'An IPv4 network, e.g. 192.168.2.0/24' } as const;
const text = { type: 'string' } as const;
const path = (description: string) => ({ type: 'string', description }) as const;

const node = (what: string, extra: Record<string, unknown> = {}) =>
  ({
    type: 'object',
    additionalProperties: false,
    required: ['name', 'address'],
    properties: {
      name: { type: 'string', description: `The ${what}'s node name (an RFC 1123 label, e.g. k3s-prod-1)` },
      address: { ...ipv4, description: `The ${what}'s address on network.nodeCidr` },
      ...extra,
    },
  }) as const;

export const inventorySchema = {
  $schema: 'http://json-schema.org/draft-07/schema#',
  $id: 'https://bootstrap.invalid/inventory/v1/schema.json',
  title: 'bootstrap inventory v1',
  description: 'One environment of a k3s cluster built by `bootstrap` (inventory/<env>.yaml).',
  type: 'object',
  additionalProperties: false,
  required: ['environment', 'ssh', 'k3s', 'controlPlane', 'network', 'servers'],
  properties: {
    environment: { type: 'string', description: "Must equal the file's base name (prod for inventory/prod.yaml)" },
    ssh: {
      type: 'object',
      additionalProperties: false,
      required: ['user'],
      properties: {
        user: { type: 'string', description: 'Login user, not root: commands that need root go through `sudo -n`' },
        port: { type: 'integer', minimum: 1, maximum: 65535, default: 22 },
        identityFile: path('Private key; without it the ssh-agent is used'),
        knownHostsFile: { ...path('Host keys are verified against this file'), default: '~/.ssh/known_hosts' },
        bastion: {
          type: 'string',
          pattern: '^([^@\\s:]+@)?[^@\\s:]+(:[0-9]{1,5})?$',
          description: 'Jump host: [user@]host[:port], or an ~/.ssh/config alias',
        },
      },
    },
    k3s: {
      type: 'object',
      additionalProperties: false,
      required: ['version', 'artifacts'],
      properties: {
        version: { type: 'string', pattern: '^v[0-9]+\\.[0-9]+\\.[0-9]+\\+k3s[0-9]+$', description: 'e.g. v1.33.5+k3s1' },
        artifacts: path('Folder holding the k3s binary (and optionally the images tarball)'),
        clusterCidr: { ...cidr, description: 'Pod network', default: '10.42.0.0/16' },
        serviceCidr: { ...cidr, description: 'Service network', default: '10.43.0.0/16' },
        rollingAgents: {
          type: 'integer',
          minimum: 1,
          maximum: 100,
          default: 1,
          description: 'How many agents a rolling change (an upgrade, a changed flag) drains and restarts at once; servers always go one at a time',
        },
        drainSeconds: {
          type: 'integer',
          minimum: 10,
          maximum: 3600,
          default: 180,
          description:
            "How long a node's drain (a rolling change, a removal) may take: evictions a PodDisruptionBudget refuses are asked again every 5 s, and evicted pods are waited for, until this runs out (DRAIN_BLOCKED, DRAIN_TIMEOUT)",
        },
        imageArchives: {
          type: 'array',
          default: [],
          description:
            'Air-gapped sites: the image archives of the add-ons (kube-vip, Cilium, Flux), placed in agent/images on every node. When any is named, every image the add-ons pull must be in one (a digest-pinned image in an OCI archive)',
          items: {
            type: 'object',
            additionalProperties: false,
            required: ['file'],
            properties: {
              file: path('An image archive k3s imports: .tar, .tar.gz or .tar.zst (an OCI image layout keeps digests; docker save keeps tags only)'),
              sha256: { type: 'string', pattern: '^[0-9a-f]{64}$', description: "The archive's sha256, checked before any change" },
              url: {
                type: 'string',
                pattern: '^https?://[^\\s]+$',
                description: 'Where `bootstrap artifacts` downloads the archive from when it is missing (verified against sha256 when given)',
              },
            },
          },
        },
      },
    },
    controlPlane: {
      type: 'object',
      additionalProperties: false,
      required: ['vip'],
      properties: {
        vip: { ...ipv4, description: 'The control-plane VIP kube-vip announces: what Cilium and agents dial' },
        // 6443 only: k3s listens on 6443 unless https-listen-port is set, which nothing renders, and
        // kube-vip in ARP mode only puts the VIP on a NIC (no port translation); README "Inventory".
        port: {
          type: 'integer',
          const: 6443,
          default: 6443,
          description:
            'The API port: 6443 only (k3s listens on 6443 and kube-vip in ARP mode does not translate ports; another port would break joins, the VIP and Cilium)',
        },
        interface: {
          type: 'string',
          pattern: '^[A-Za-z0-9_.:-]{1,15}$',
          description: '`auto` (the NIC with the route to nodeCidr) or a NIC name',
          default: 'auto',
        },
      },
    },
    network: {
      type: 'object',
      additionalProperties: false,
      required: ['nodeCidr'],
      properties: {
        nodeCidr: { ...cidr, description: 'The LAN the nodes and the VIP live on' },
        lbPool: {
          type: 'object',
          additionalProperties: false,
          required: ['start', 'stop'],
          properties: { start: ipv4, stop: ipv4 },
          description: 'Addresses Cilium hands out to LoadBalancer services',
        },
        gatewayVip: { ...ipv4, description: 'The Gateway address, inside lbPool' },
      },
    },
    servers: {
      type: 'array',
      minItems: 1,
      items: node('server', {
        founder: { type: 'boolean', description: 'Exactly one server initialises the cluster' },
      }),
    },
    agents: { type: 'array', items: node('agent'), default: [] },
    gitops: {
      type: 'object',
      additionalProperties: false,
      required: ['checkout', 'url', 'branch', 'path'],
      properties: {
        checkout: path('A local checkout of the GitOps repository (read only)'),
        url: text,
        branch: text,
        path: { type: 'string', description: 'The cluster folder in the repository, e.g. clusters/prod' },
      },
    },
    cilium: {
      type: 'object',
      additionalProperties: false,
      required: ['chart', 'helmRelease'],
      properties: {
        chart: path('The Cilium chart tarball'),
        helmRelease: path('The HelmRelease that adopts Cilium, relative to gitops.checkout'),
      },
    },
    flux: {
      type: 'object',
      additionalProperties: false,
      required: ['install', 'deployKeyFile', 'knownHostsFile'],
      properties: {
        install: path('The Flux install manifest'),
        deployKeyFile: path('Private deploy key for the GitOps repository (mode 0600)'),
        knownHostsFile: path("known_hosts of the GitOps server (the deploy-key Secret's known_hosts)"),
        version: {
          type: 'string',
          pattern: '^v[0-9]+\\.[0-9]+\\.[0-9]+$',
          description: 'The Flux release whose install.yaml `bootstrap artifacts` downloads to flux.install (e.g. v2.6.4)',
        },
        installSha256: {
          type: 'string',
          pattern: '^[0-9a-f]{64}$',
          description: "The sha256 of that install.yaml: Flux publishes none for it, so `bootstrap artifacts` verifies the download against this pin",
        },
        waitSeconds: {
          type: 'integer',
          minimum: 10,
          maximum: 300,
          default: 300,
          description: "How long the flux phase waits for Flux Ready (the hand-over, then the gate). Only Stalled ends the wait sooner: any other failure is waited on, as Flux may still clear it, and named when this runs out",
        },
      },
    },
    parallelism: {
      type: 'integer',
      minimum: 1,
      maximum: 100,
      default: 10,
      description:
        'How many hosts the engine works on at once where hosts are independent (connections, probes, node-baseline, kube-vip, agents joining); servers join and roll one at a time whatever it says',
    },
    waivers: {
      type: 'array',
      default: [],
      description: `Gates this environment cannot satisfy, waived with a reason. Waivable: ${WAIVABLE_CAUSES.join(', ')}`,
      items: {
        type: 'object',
        additionalProperties: false,
        required: ['cause', 'reason'],
        properties: {
          cause: { type: 'string', examples: [...WAIVABLE_CAUSES] },
          reason: { type: 'string', description: 'Why the gate cannot be met here' },
        },
      },
    },
  },
} as const;

/** The text of inventory/schema.json. */
export function renderSchemaFile(): string {
  return `${JSON.stringify(inventorySchema, null, 2)}\n`;
}
