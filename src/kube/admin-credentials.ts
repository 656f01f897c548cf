// The state folder's admin kubeconfig as credentials for the requests the engine makes itself
// (src/kube/get-through.ts): the cluster CA, the client certificate and key (PEM) or a bearer token of the
// current context. Read as YAML, without @kubernetes/client-node: loading that client costs about 0.4 s of
// CPU, which a run that only asks GETs (a `--check`, a converged run's probes) need not pay. The fields are
// the kubeconfig's own (k8s.io/client-go tools/clientcmd/api/v1 types.go: certificate-authority-data,
// client-certificate-data, client-key-data, token, current-context).
import { parse } from 'yaml';
import { CauseError } from '../errors.ts';
import { kubeconfigPath } from '../k3s/kubeconfig-file.ts';
import { readProblem, readRegularText } from '../util/regular-file.ts';
import type { ApiCredentials } from './get-through.ts';

/** The entry of `list` called `name`, its `field` (the kubeconfig's named lists: clusters, users, contexts). */
function entry(list: unknown, name: unknown, field: string): Record<string, unknown> | undefined {
  if (!Array.isArray(list) || typeof name !== 'string') return undefined;
  const found = (list as (Record<string, unknown> | null)[]).find((e) => e && typeof e === 'object' && e.name === name)?.[field];
  return found && typeof found === 'object' ? (found as Record<string, unknown>) : undefined;
}

const text = (v: unknown) => (typeof v === 'string' && v ? v : undefined);
const pem = (data: unknown) => (text(data) ? Buffer.from(data as string, 'base64').toString('utf8') : undefined);

/**
 * The last kubeconfig read and what it gave: a run's reads ask for the credentials at every GET, and parsing
 * the YAML (long base64 lines) cost about 0.1 s of the engine's CPU each time; the file is read again each
 * time (a few KB), so a kubeconfig k3s-founder rewrote is used at once. In memory only.
 */
let last: { path: string; raw: string; creds: ApiCredentials } | undefined;

/**
 * The current context's credentials. KUBECONFIG_NOT_FETCHED when the state folder holds no kubeconfig;
 * STATE_FILE_CORRUPT when it cannot be read, is not a kubeconfig, names no cluster CA (the API could not be
 * verified) or no client credentials.
 */
export function apiCredentials(stateDir: string): ApiCredentials {
  const path = kubeconfigPath(stateDir);
  let raw: string;
  try {
    raw = readRegularText(path);
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    if (code === 'ENOENT')
      throw new CauseError('KUBECONFIG_NOT_FETCHED', {
        message: 'The state folder holds no kubeconfig yet: the engine cannot reach the Kubernetes API',
        evidence: { seen: `${path} does not exist` },
      });
    throw new CauseError('STATE_FILE_CORRUPT', {
      message: 'The state folder kubeconfig cannot be used',
      cause: err,
      evidence: { seen: `${path} ${readProblem(err)}` },
    });
  }
  if (last?.path === path && last.raw === raw) return last.creds;
  const creds = credentialsIn(path, raw);
  last = { path, raw, creds };
  return creds;
}

/** apiCredentials of the kubeconfig text `raw` read from `path`. */
function credentialsIn(path: string, raw: string): ApiCredentials {
  let doc: unknown;
  try {
    doc = parse(raw);
  } catch (err) {
    throw new CauseError('STATE_FILE_CORRUPT', {
      message: 'The state folder kubeconfig cannot be used',
      cause: err,
      evidence: { seen: `${path} is not a kubeconfig: ${(err as Error).message.split('\n')[0]}` },
    });
  }
  const config = doc && typeof doc === 'object' ? (doc as Record<string, unknown>) : {};
  const context = entry(config.contexts, config['current-context'], 'context');
  const cluster = entry(config.clusters, context?.cluster, 'cluster');
  const user = entry(config.users, context?.user, 'user');
  const caFile = text(cluster?.['certificate-authority']);
  if (!cluster || (!text(cluster['certificate-authority-data']) && !caFile))
    throw new CauseError('STATE_FILE_CORRUPT', {
      message: 'The state folder kubeconfig names no cluster CA: the API could not be verified',
      evidence: { seen: `${path}: its current cluster has no certificate-authority-data` },
    });
  // A CA in a file of its own (a kubeconfig the operator put there) is read as a client would read it.
  const creds = {
    ca: pem(cluster['certificate-authority-data']) ?? readRegularText(caFile!),
    cert: pem(user?.['client-certificate-data']),
    key: pem(user?.['client-key-data']),
    token: text(user?.token),
  };
  if (!(creds.cert && creds.key) && !creds.token)
    throw new CauseError('STATE_FILE_CORRUPT', {
      message: 'The state folder kubeconfig cannot be used',
      evidence: { seen: `${path}: its current user carries neither client-certificate-data and client-key-data nor a token` },
    });
  return creds;
}
