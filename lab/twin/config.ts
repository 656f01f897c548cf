// Configuration as k3s reads it (k3s pkg/configfilearg, docs installation/configuration):
// /etc/rancher/k3s/config.yaml, then config.yaml.d/*.yaml in alphabetical order; a later file's key
// replaces an earlier one, a key ending in `+` appends to it; flags on the command line win over files.
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import YAML from 'yaml';

type Value = string | boolean | string[];
export type Settings = Record<string, Value>;

const DEFAULT_CONFIG_FILE = '/etc/rancher/k3s/config.yaml';

/** Flags that take no value (a bare `--cluster-init` means true). */
const BOOLEAN_FLAGS = new Set([
  'cluster-init',
  'cluster-reset',
  'disable-cloud-controller',
  'disable-helm-controller',
  'disable-network-policy',
  'disable-kube-proxy',
  'secrets-encryption',
  'embedded-registry',
  'flannel-ipv6-masq',
  'flannel-external-ip',
  'supervisor-metrics',
  'disable-scheduler',
  'disable-etcd',
  'disable-apiserver',
  'disable-controller-manager',
  'etcd-disable-snapshots',
  'debug',
  'help',
  'version',
  'prefer-bundled-bin',
  'protect-kernel-defaults',
  'selinux',
  'lb-server-port',
  'no-deploy',
]);
/** Flags that may repeat; in YAML they are lists. */
const LIST_FLAGS = new Set([
  'tls-san',
  'disable',
  'node-label',
  'node-taint',
  'kube-apiserver-arg',
  'kubelet-arg',
  'etcd-arg',
  'kube-controller-manager-arg',
  'kube-proxy-arg',
  'node-ip',
  'node-external-ip',
]);
const SHORT: Record<string, string> = { t: 'token', s: 'server', c: 'config', d: 'data-dir', v: 'debug' };

export interface ParsedArgs {
  flags: Settings;
  positional: string[];
}

/** Parses `--flag value`, `--flag=value`, `-t value`, bare boolean flags. */
export function parseFlags(argv: string[]): ParsedArgs {
  const flags: Settings = {};
  const positional: string[] = [];
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i];
    if (!arg.startsWith('-') || arg === '-') {
      positional.push(arg);
      continue;
    }
    let name = arg.replace(/^--?/, '');
    let value: string | undefined;
    const eq = name.indexOf('=');
    if (eq >= 0) {
      value = name.slice(eq + 1);
      name = name.slice(0, eq);
    }
    name = SHORT[name] ?? name;
    let v: Value;
    if (BOOLEAN_FLAGS.has(name)) v = value === undefined ? true : value !== 'false';
    else v = value ?? argv[++i] ?? '';
    if (LIST_FLAGS.has(name)) {
      const prev = flags[name];
      const items = String(v).split(',').filter(Boolean);
      flags[name] = [...(Array.isArray(prev) ? prev : []), ...items];
    } else flags[name] = v;
  }
  return { flags, positional };
}

function normalise(v: unknown): Value {
  if (Array.isArray(v)) return v.map(String);
  if (typeof v === 'boolean') return v;
  return String(v);
}

/** Merges config documents in order: later keys replace, `key+` appends. */
export function mergeConfigDocs(docs: Array<Record<string, unknown>>): Settings {
  const out: Settings = {};
  for (const doc of docs) {
    for (const [rawKey, rawVal] of Object.entries(doc ?? {})) {
      const append = rawKey.endsWith('+');
      const key = append ? rawKey.slice(0, -1) : rawKey;
      const val = normalise(rawVal);
      if (append) {
        const prev = out[key];
        const prevList = prev === undefined ? [] : Array.isArray(prev) ? prev : [String(prev)];
        out[key] = [...prevList, ...(Array.isArray(val) ? val : [String(val)])];
      } else out[key] = val;
    }
  }
  return out;
}

/**
 * Reads config.yaml and the files of config.yaml.d named *.yaml or *.yml in any case (folders skipped), by name,
 * and lets flags win; K3S_TOKEN, K3S_URL and K3S_NODE_NAME count only where no file or flag sets the key: k3s
 * puts the files' values on the command line, and urfave/cli takes a flag there over its variable (k3s-io/k3s
 * @f6466040 pkg/configfilearg/parser.go dotDFiles, readConfigFile, Parse).
 */
export function loadSettings(flags: Settings, env: NodeJS.ProcessEnv = process.env): Settings {
  const file = typeof flags.config === 'string' ? flags.config : (env.K3S_CONFIG_FILE ?? DEFAULT_CONFIG_FILE);
  const docs: Array<Record<string, unknown>> = [];
  if (existsSync(file)) docs.push(YAML.parse(readFileSync(file, 'utf8')) ?? {});
  const dropIn = `${file}.d`;
  if (existsSync(dropIn)) {
    for (const name of readdirSync(dropIn, { withFileTypes: true })
      .filter((e) => !e.isDirectory() && /\.ya?ml$/i.test(e.name))
      .map((e) => e.name)
      .sort()) {
      docs.push(YAML.parse(readFileSync(join(dropIn, name), 'utf8')) ?? {});
    }
  }
  const fromFiles = mergeConfigDocs(docs);
  const fromEnv: Settings = {};
  if (env.K3S_TOKEN) fromEnv.token = env.K3S_TOKEN;
  if (env.K3S_URL) fromEnv.server = env.K3S_URL;
  if (env.K3S_NODE_NAME) fromEnv['node-name'] = env.K3S_NODE_NAME;
  return { ...fromEnv, ...fromFiles, ...flags };
}

export function str(s: Settings, key: string, dflt = ''): string {
  const v = s[key];
  if (v === undefined) return dflt;
  return Array.isArray(v) ? v.join(',') : String(v);
}

export function bool(s: Settings, key: string): boolean {
  const v = s[key];
  return v === true || v === 'true';
}

export function list(s: Settings, key: string): string[] {
  const v = s[key];
  if (v === undefined || v === false) return [];
  return (Array.isArray(v) ? v : String(v).split(',')).map((x) => x.trim()).filter(Boolean);
}
