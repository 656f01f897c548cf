// Inventory format v1, as the operator writes it (inventory/<env>.yaml) and as the tool sees it
// after validation, with every default filled in. The JSON Schema (schema.ts) is the source of the
// defaults; these types are its TypeScript face (test/unit/inventory-schema.test.ts keeps them honest).
import type { WaivableCauseId } from './waivers.ts';
import type { ServiceAddresses } from './service-addresses.ts';

interface Server {
  name: string;
  address: string;
  /** Exactly one server initialises the cluster; the others join it. */
  founder?: boolean;
}

interface Agent {
  name: string;
  address: string;
}

interface Waiver {
  cause: WaivableCauseId;
  reason: string;
}

/** A validated inventory with defaults applied. Paths are as written; see Derived.paths for resolved ones. */
export interface Inventory {
  environment: string;
  ssh: {
    user: string;
    port: number;
    identityFile?: string;
    knownHostsFile: string;
    /** `[user@]host[:port]`, or an ~/.ssh/config alias. */
    bastion?: string;
  };
  k3s: {
    version: string;
    artifacts: string;
    clusterCidr: string;
    serviceCidr: string;
    /** How many agents a rolling change drains and restarts at once (servers: always one). */
    rollingAgents: number;
    /** How long a node's drain may take before DRAIN_BLOCKED or DRAIN_TIMEOUT names what holds it. */
    drainSeconds: number;
    /** Add-on image archives for an air-gapped site, placed in agent/images on every node. */
    imageArchives: { file: string; sha256?: string; url?: string }[];
  };
  controlPlane: {
    vip: string;
    port: number;
    /** `auto` (the NIC holding the route to nodeCidr) or a NIC name. */
    interface: string;
  };
  network: {
    nodeCidr: string;
    lbPool?: { start: string; stop: string };
    gatewayVip?: string;
  };
  servers: Server[];
  agents: Agent[];
  gitops?: {
    checkout: string;
    url: string;
    branch: string;
    path: string;
  };
  cilium?: {
    chart: string;
    /** Relative to gitops.checkout: the HelmRelease that adopts Cilium after the bootstrap. */
    helmRelease: string;
  };
  flux?: {
    install: string;
    deployKeyFile: string;
    /** known_hosts of the GitOps server: Flux's source-controller verifies the server's host key with it. */
    knownHostsFile: string;
    /** The Flux release whose install.yaml `bootstrap artifacts` downloads. */
    version?: string;
    /** That install.yaml's sha256 (Flux publishes none for it). */
    installSha256?: string;
    /** The flux phase's wait for Flux Ready, in seconds (at most its gate's budget, 300). */
    waitSeconds?: number;
  };
  /** How many independent hosts the engine works on at once (connections, probes, per-host phases). */
  parallelism: number;
  waivers: Waiver[];
}

/** One broken contract; the same shape as errors.ts Violation, re-exported for convenience. */
;

/** Something worth saying that does not stop the run (a 1-server cluster is not HA). */
export interface InventoryWarning {
  message: string;
  path: string;
}

interface Endpoint {
  host: string;
  port: number;
}

/** Absolute paths: relative ones resolved against the inventory file's folder, `~` expanded. */
export interface ResolvedPaths {
  /** The folder the inventory file is in. */
  inventoryDir: string;
  k3sArtifacts: string;
  /** k3sArtifacts/k3s: the binary uploaded to every node. */
  k3sBinary: string;
  sshKnownHostsFile: string;
  sshIdentityFile?: string;
  /** k3s.imageArchives, resolved (same order). */
  imageArchives: { path: string; sha256?: string }[];
  gitopsCheckout?: string;
  ciliumChart?: string;
  /** Resolved against gitops.checkout (it is a file of the GitOps repository). */
  ciliumHelmRelease?: string;
  fluxInstall?: string;
  fluxDeployKeyFile?: string;
  fluxKnownHostsFile?: string;
}

/** Values computed from the inventory: written once there, never restated. */
export interface Derived {
  environment: string;
  founder: Server;
  /** The other servers, in inventory order: they join the founder one at a time. */
  joiners: Server[];
  servers: Server[];
  agents: Agent[];
  /** What Cilium and agents dial: the control-plane VIP (HA), never a node. */
  apiEndpoint: Endpoint;
  /** `https://<vip>:<port>` */
  apiUrl: string;
  /** What joining servers dial on a cold build: the founder, because no VIP exists yet. */
  joinTarget: string;
  /** The SANs every server's config carries: the VIP, then 127.0.0.1 (each server adds its own address). */
  tlsSans: string[];
  /** From k3s.serviceCidr: the `kubernetes` Service's ClusterIP and cluster DNS, as k3s derives them. */
  serviceAddresses: ServiceAddresses;
  /**
   * The jump host as written, split up. Missing user/port are left out, not defaulted: the host may
   * be an ~/.ssh/config alias whose User and Port the SSH layer reads.
   */
  bastion?: { user?: string; host: string; port?: number };
  paths: ResolvedPaths;
  /** Gates waived for this environment (every run prints them). */
  waivers: Waiver[];
  /** False with a single server. */
  highlyAvailable: boolean;
}
