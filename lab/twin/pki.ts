// Cluster certificates, made with the openssl CLI present on every lab host. k3s keeps separate
// server and client CAs under <data-dir>/server/tls (k3s pkg/daemons/control/deps/deps.go); the twin
// does the same, with one serving certificate for :6443 (upstream: dynamiclistener) and one admin client
// certificate (CN system:admin, O system:masters) for the kubeconfig.
import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync, chmodSync } from 'node:fs';
import { randomBytes } from 'node:crypto';
import { join } from 'node:path';
import { tmpdir } from 'node:os';
import { labTool } from './tools.ts';

export interface TlsPaths {
  dir: string;
  serverCA: string;
  serverCAKey: string;
  clientCA: string;
  clientCAKey: string;
  serving: string;
  servingKey: string;
  admin: string;
  adminKey: string;
}

export function tlsPaths(dataDir: string): TlsPaths {
  const dir = join(dataDir, 'server', 'tls');
  return {
    dir,
    serverCA: join(dir, 'server-ca.crt'),
    serverCAKey: join(dir, 'server-ca.key'),
    clientCA: join(dir, 'client-ca.crt'),
    clientCAKey: join(dir, 'client-ca.key'),
    serving: join(dir, 'serving-kube-apiserver.crt'),
    servingKey: join(dir, 'serving-kube-apiserver.key'),
    admin: join(dir, 'client-admin.crt'),
    adminKey: join(dir, 'client-admin.key'),
  };
}

function openssl(args: string[]): void {
  execFileSync(labTool('openssl'), args, { stdio: ['ignore', 'ignore', 'pipe'] });
}

const KEY = ['-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes'];

function newCA(cert: string, key: string, cn: string): void {
  openssl([
    'req',
    '-x509',
    ...KEY,
    '-keyout',
    key,
    '-out',
    cert,
    '-days',
    '3650',
    '-subj',
    `/CN=${cn}`,
    '-addext',
    'basicConstraints=critical,CA:TRUE',
    '-addext',
    'keyUsage=critical,keyCertSign,digitalSignature,keyEncipherment',
  ]);
  chmodSync(key, 0o600);
}

function signLeaf(opts: { ca: string; caKey: string; cert: string; key: string; subject: string; ext: string }): void {
  const tmp = mkdtempSync(join(tmpdir(), 'k3s-twin-pki-'));
  try {
    const csr = join(tmp, 'req.csr');
    const ext = join(tmp, 'ext.cnf');
    writeFileSync(ext, opts.ext);
    openssl(['req', '-new', ...KEY, '-keyout', opts.key, '-out', csr, '-subj', opts.subject]);
    chmodSync(opts.key, 0o600);
    openssl([
      'x509',
      '-req',
      '-in',
      csr,
      '-CA',
      opts.ca,
      '-CAkey',
      opts.caKey,
      '-set_serial',
      '0x' + randomBytes(8).toString('hex'),
      '-days',
      '365',
      '-out',
      opts.cert,
      '-extfile',
      ext,
    ]);
  } finally {
    rmSync(tmp, { recursive: true, force: true });
  }
}

/** The founder creates both CAs once; joiners receive them from the founder instead. */
export function ensureCAs(p: TlsPaths): void {
  mkdirSync(p.dir, { recursive: true, mode: 0o700 });
  const now = Math.floor(Date.now() / 1000);
  if (!existsSync(p.serverCA)) newCA(p.serverCA, p.serverCAKey, `k3s-server-ca@${now}`);
  if (!existsSync(p.clientCA)) newCA(p.clientCA, p.clientCAKey, `k3s-client-ca@${now}`);
}

export interface CAMaterial {
  serverCA: string;
  serverCAKey: string;
  clientCA: string;
  clientCAKey: string;
}

export function readCAs(p: TlsPaths): CAMaterial {
  return {
    serverCA: readFileSync(p.serverCA, 'utf8'),
    serverCAKey: readFileSync(p.serverCAKey, 'utf8'),
    clientCA: readFileSync(p.clientCA, 'utf8'),
    clientCAKey: readFileSync(p.clientCAKey, 'utf8'),
  };
}

export function writeCAs(p: TlsPaths, m: CAMaterial): void {
  mkdirSync(p.dir, { recursive: true, mode: 0o700 });
  writeFileSync(p.serverCA, m.serverCA);
  writeFileSync(p.serverCAKey, m.serverCAKey, { mode: 0o600 });
  writeFileSync(p.clientCA, m.clientCA);
  writeFileSync(p.clientCAKey, m.clientCAKey, { mode: 0o600 });
}

function isIP(s: string): boolean {
  return /^\d+\.\d+\.\d+\.\d+$/.test(s) || s.includes(':');
}

/**
 * SANs of the serving certificate: tls-san entries, the node IP, 127.0.0.1, localhost and the in-cluster names,
 * with the `kubernetes` Service's ClusterIP (k3s-io/k3s pkg/cli/server/server.go appends apiServerServiceIP).
 */
export function servingSANs(tlsSans: string[], nodeIPs: string[], nodeName: string, kubernetesIP: string): string[] {
  const all = [
    ...tlsSans,
    ...nodeIPs,
    '127.0.0.1',
    '::1',
    'localhost',
    nodeName,
    'kubernetes',
    'kubernetes.default',
    'kubernetes.default.svc',
    'kubernetes.default.svc.cluster.local',
    kubernetesIP,
  ];
  return [...new Set(all.filter(Boolean))];
}

export function issueServing(p: TlsPaths, sans: string[]): void {
  const alt = sans.map((s) => (isIP(s) ? `IP:${s}` : `DNS:${s}`)).join(',');
  signLeaf({
    ca: p.serverCA,
    caKey: p.serverCAKey,
    cert: p.serving,
    key: p.servingKey,
    subject: '/O=k3s/CN=k3s',
    ext: `subjectAltName=${alt}\nextendedKeyUsage=serverAuth\nkeyUsage=critical,digitalSignature,keyEncipherment\n`,
  });
}

export function ensureAdmin(p: TlsPaths): void {
  if (existsSync(p.admin)) return;
  signLeaf({
    ca: p.clientCA,
    caKey: p.clientCAKey,
    cert: p.admin,
    key: p.adminKey,
    subject: '/O=system:masters/CN=system:admin',
    ext: 'extendedKeyUsage=clientAuth\nkeyUsage=critical,digitalSignature,keyEncipherment\n',
  });
}

/**
 * A kubelet certificate for a node, as k3s's supervisor hands it out (pkg/server/handlers/handlers.go
 * ClientKubeletCert / ServingKubeletCert): client = CN system:node:<name>, O system:nodes, signed by the
 * client CA; serving = CN <name>, SANs <name>, localhost, 127.0.0.1 and the node's IPs, signed by the server
 * CA. The answer is the certificate, the CA and the private key in one PEM text (upstream's answer to a
 * request without a CSR; the twin makes a fresh key per request instead of upstream's shared one).
 */
export function signNodeCert(p: TlsPaths, kind: 'client' | 'serving', node: string, ips: string[]): string {
  const tmp = mkdtempSync(join(tmpdir(), 'k3s-twin-node-'));
  try {
    const cert = join(tmp, 'node.crt');
    const key = join(tmp, 'node.key');
    const ca = kind === 'client' ? p.clientCA : p.serverCA;
    const caKey = kind === 'client' ? p.clientCAKey : p.serverCAKey;
    const alt = [`DNS:${node}`, 'DNS:localhost', 'IP:127.0.0.1', ...ips.filter(isIP).map((ip) => `IP:${ip}`)].join(',');
    signLeaf(
      kind === 'client'
        ? {
            ca,
            caKey,
            cert,
            key,
            subject: `/O=system:nodes/CN=system:node:${node}`,
            ext: 'extendedKeyUsage=clientAuth\nkeyUsage=critical,digitalSignature,keyEncipherment\n',
          }
        : {
            ca,
            caKey,
            cert,
            key,
            subject: `/CN=${node}`,
            ext: `subjectAltName=${alt}\nextendedKeyUsage=serverAuth\nkeyUsage=critical,digitalSignature,keyEncipherment\n`,
          },
    );
    return readFileSync(cert, 'utf8') + readFileSync(ca, 'utf8') + readFileSync(key, 'utf8');
  } finally {
    rmSync(tmp, { recursive: true, force: true });
  }
}
