// Flux's source-controller (fluxcd/source-controller, internal/controller/gitrepository_controller.go and
// helmrepository_controller.go) for what the bootstrap uses: a GitRepository over SSH with a deploy-key
// Secret (identity, known_hosts), fetched with real `git` and `ssh` (strict host key checking against the
// Secret's known_hosts only), its tree stored as the artifact (in etcd, so the kustomize-controller twin on
// any server reads it), and HelmRepositories marked as stored (the lab has no network; the chart comes
// from the lab's k3s helm-controller twin). Conditions, reasons and messages as upstream writes them.
import { execFile } from 'node:child_process';
import { createHash } from 'node:crypto';
import { mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';
import { log } from '../../log.ts';
import { type AddonContext, nowIso } from '../context.ts';
import { type Attempt, type Condition, builtin, due, findKind, handled, intervalRequeue, observed, withConditions, writeStatus } from './common.ts';
import { branchNotFoundMessage, fetchFailedMessage, goGitError, sshAddress } from './git-errors.ts';
import { labTool } from '../../tools.ts';

interface Artifact {
  revision: string;
  digest: string;
  lastUpdateTime: string;
  path: string;
  url: string;
  size: number;
}

export interface StoredArtifact {
  artifact: Artifact;
  /** The fetched tree: path (relative, '/'-separated) → content. */
  files: Record<string, string>;
}

const artifactKey = (kind: string, ns: string, name: string) => `/twin/flux/artifacts/${kind}/${ns}/${name}`;

export async function readArtifact(ctx: AddonContext, kind: string, ns: string, name: string): Promise<StoredArtifact | undefined> {
  const kv = await ctx.etcd.get(artifactKey(kind, ns, name));
  return kv ? (JSON.parse(kv.value) as StoredArtifact) : undefined;
}

function run(cmd: string, args: string[], env: NodeJS.ProcessEnv, timeoutMs = 60_000): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    execFile(cmd, args, { env, timeout: timeoutMs, maxBuffer: 16 << 20 }, (err, stdout, stderr) => {
      // A host without git (booted from a root filesystem older than the Flux twins) says so plainly.
      const missing = (err as any)?.code === 'ENOENT' ? `${cmd} is not installed on this lab host (lab down, then lab up)` : '';
      resolve({ code: err ? (typeof (err as any).code === 'number' ? (err as any).code : 1) : 0, stdout: String(stdout), stderr: missing || String(stderr) });
    });
  });
}

function treeOf(dir: string): Record<string, string> {
  const out: Record<string, string> = {};
  const walk = (d: string) => {
    for (const e of readdirSync(d).sort()) {
      if (e === '.git') continue;
      const p = join(d, e);
      if (statSync(p).isDirectory()) walk(p);
      else out[relative(dir, p).split('\\').join('/')] = readFileSync(p, 'utf8');
    }
  };
  walk(dir);
  return out;
}

const artifactDigest = (files: Record<string, string>) =>
  `sha256:${createHash('sha256')
    .update(JSON.stringify(Object.entries(files).sort()))
    .digest('hex')}`;

type Fetch = { ok: true; sha: string; files: Record<string, string> } | { ok: false; reason: string; message: string };

/** ls-remote first (cheap), a shallow clone only when the branch moved. */
async function fetchBranch(url: string, branch: string, secret: any, known: string | undefined): Promise<Fetch | { ok: true; sha: string; files?: undefined }> {
  const data = secret?.data ?? {};
  const dec = (k: string) => (data[k] !== undefined ? Buffer.from(String(data[k]), 'base64').toString('utf8') : undefined);
  const identity = dec('identity');
  const knownHosts = dec('known_hosts');
  if (!identity)
    return {
      ok: false,
      reason: 'AuthenticationFailed',
      message: "failed to configure authentication options: invalid 'ssh' auth option: 'identity' is required",
    };
  if (!knownHosts)
    return {
      ok: false,
      reason: 'AuthenticationFailed',
      message: "failed to configure authentication options: invalid 'ssh' auth option: 'known_hosts' is required",
    };
  const dir = mkdtempSync(join(tmpdir(), 'flux-source-'));
  try {
    writeFileSync(join(dir, 'identity'), identity.endsWith('\n') ? identity : `${identity}\n`, { mode: 0o600 });
    writeFileSync(join(dir, 'known_hosts'), knownHosts, { mode: 0o600 });
    const ssh = `ssh -i ${dir}/identity -o IdentitiesOnly=yes -o StrictHostKeyChecking=yes -o UserKnownHostsFile=${dir}/known_hosts -o GlobalKnownHostsFile=/dev/null -o BatchMode=yes -o ConnectTimeout=10`;
    const env = { ...process.env, GIT_SSH_COMMAND: ssh, GIT_TERMINAL_PROMPT: '0', HOME: dir, GIT_CONFIG_NOSYSTEM: '1' };
    const fail = (stage: 'list' | 'clone', stderr: string): Fetch => ({
      ok: false,
      reason: 'GitOperationFailed',
      message: fetchFailedMessage(stage, url, goGitError(stderr, sshAddress(url))),
    });
    // go-git lists the remote first only when the source already has a revision; else it clones at once.
    const ls = await run(labTool('git'), ['ls-remote', '--heads', url, `refs/heads/${branch}`], env);
    if (ls.code !== 0) return fail(known ? 'list' : 'clone', ls.stderr);
    const sha = ls.stdout.split(/\s+/)[0];
    if (!sha) return { ok: false, reason: 'GitOperationFailed', message: branchNotFoundMessage(url, branch) };
    if (sha === known) return { ok: true, sha };
    const clone = await run(labTool('git'), ['clone', '--quiet', '--depth', '1', '--single-branch', '--branch', branch, url, join(dir, 'tree')], env);
    if (clone.code !== 0) return fail('clone', clone.stderr);
    const head = (await run(labTool('git'), ['-C', join(dir, 'tree'), 'rev-parse', 'HEAD'], env)).stdout.trim();
    return { ok: true, sha: head, files: treeOf(join(dir, 'tree')) };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

async function reconcileGitRepository(ctx: AddonContext, info: any, repo: any): Promise<void> {
  const ns = repo.metadata.namespace;
  const name = repo.metadata.name;
  const branch = repo.spec?.ref?.branch ?? 'master';
  const url = String(repo.spec?.url ?? '');
  const gen = repo.metadata.generation ?? 1;
  const stored = await readArtifact(ctx, 'GitRepository', ns, name);
  const knownSha = stored && stored.artifact.revision.startsWith(`${branch}@sha1:`) ? stored.artifact.revision.slice(`${branch}@sha1:`.length) : undefined;
  let result: Fetch | { ok: true; sha: string; files?: undefined };
  const secretName = repo.spec?.secretRef?.name;
  const secret = secretName ? await ctx.store.tryGet(builtin('secrets'), ns, secretName) : undefined;
  const otherRef = ['tag', 'semver', 'commit', 'name'].find((k) => repo.spec?.ref?.[k] !== undefined);
  if (!url.startsWith('ssh://'))
    result = { ok: false, reason: 'URLInvalid', message: `the lab's source-controller twin fetches ssh:// URLs only, not '${url}'` };
  else if (otherRef)
    result = { ok: false, reason: 'GitOperationFailed', message: `the lab's source-controller twin fetches branches only, not ref.${otherRef}` };
  else if (secretName && !secret)
    result = { ok: false, reason: 'AuthenticationFailed', message: `failed to get secret '${ns}/${secretName}': secrets "${secretName}" not found` };
  else result = await fetchBranch(url, branch, secret, knownSha);

  let artifact = stored?.artifact;
  if (result.ok && result.files) {
    const digest = artifactDigest(result.files);
    const path = `gitrepository/${ns}/${name}/${result.sha}.tar.gz`;
    artifact = {
      revision: `${branch}@sha1:${result.sha}`,
      digest,
      lastUpdateTime: nowIso(),
      path,
      url: `http://source-controller.flux-system.svc.cluster.local./${path}`,
      size: JSON.stringify(result.files).length,
    };
    await ctx.etcd.put(artifactKey('GitRepository', ns, name), JSON.stringify({ artifact, files: result.files } satisfies StoredArtifact));
    log.info(`source-controller: stored artifact for ${ns}/${name} revision ${artifact.revision}`);
  }
  let conditions: Condition[];
  let status: any;
  if (result.ok) {
    const msg = `stored artifact for revision '${artifact!.revision}'`;
    conditions = withConditions(
      repo.status?.conditions,
      [
        { type: 'Ready', status: 'True', reason: 'Succeeded', message: msg, observedGeneration: gen },
        { type: 'ArtifactInStorage', status: 'True', reason: 'Succeeded', message: msg, observedGeneration: gen },
      ],
      ['FetchFailed', 'Reconciling', 'Stalled'],
    );
    status = { ...(repo.status ?? {}), ...handled(repo), ...observed(repo), conditions, ...(artifact ? { artifact } : {}) };
  } else {
    // A failed fetch is retried (a generic error, not Stalling): observedGeneration stays where it was and
    // Reconciling stays True with ProgressingWithRetry, its message from the start of the attempt.
    const old = repo.status?.observedGeneration ?? 0;
    const progress = old !== gen ? `processing object: new generation ${old} -> ${gen}` : 'reconciliation in progress';
    conditions = withConditions(
      repo.status?.conditions,
      [
        { type: 'Ready', status: 'False', reason: result.reason, message: result.message, observedGeneration: gen },
        { type: 'FetchFailed', status: 'True', reason: result.reason, message: result.message, observedGeneration: gen },
        { type: 'Reconciling', status: 'True', reason: 'ProgressingWithRetry', message: progress, observedGeneration: gen },
      ],
      ['Stalled'],
    );
    status = { ...(repo.status ?? {}), ...handled(repo), conditions, ...(artifact ? { artifact } : {}) };
  }
  await writeStatus(ctx, info, repo, status);
}

/** No network in the lab: a HelmRepository is "stored" at once; its charts are the ones the lab knows. */
async function reconcileHelmRepository(ctx: AddonContext, info: any, repo: any): Promise<void> {
  const gen = repo.metadata.generation ?? 1;
  const digest = `sha256:${createHash('sha256')
    .update(String(repo.spec?.url ?? ''))
    .digest('hex')}`;
  const msg = `stored artifact: revision '${digest}'`;
  const conditions = withConditions(repo.status?.conditions, [
    { type: 'Ready', status: 'True', reason: 'Succeeded', message: msg, observedGeneration: gen },
    { type: 'ArtifactInStorage', status: 'True', reason: 'Succeeded', message: msg, observedGeneration: gen },
  ]);
  const path = `helmrepository/${repo.metadata.namespace}/${repo.metadata.name}/index-${digest.slice(7, 23)}.yaml`;
  const artifact =
    repo.status?.artifact?.revision === digest
      ? repo.status.artifact
      : { revision: digest, digest, lastUpdateTime: nowIso(), path, url: `http://source-controller.flux-system.svc.cluster.local./${path}`, size: 0 };
  await writeStatus(ctx, info, repo, { ...(repo.status ?? {}), ...handled(repo), ...observed(repo), conditions, artifact });
}

/** A deleted source's artifact goes with it (upstream's finalizer removes its storage). */
async function collectArtifacts(ctx: AddonContext, info: any): Promise<void> {
  const prefix = '/twin/flux/artifacts/GitRepository/';
  for (const kv of (await ctx.etcd.list(prefix)).kvs) {
    const [ns, name] = kv.key.slice(prefix.length).split('/');
    if (!(await ctx.store.tryGet(info, ns, name))) await ctx.etcd.delete(kv.key);
  }
}

/** One round of the source-controller: every GitRepository and HelmRepository that is due. */
export async function sourceRound(ctx: AddonContext, lastRun: Map<string, Attempt>): Promise<void> {
  const git = await findKind(ctx, 'source.toolkit.fluxcd.io/v1', 'GitRepository');
  if (git) await collectArtifacts(ctx, git);
  for (const [kind, f] of [
    ['GitRepository', reconcileGitRepository],
    ['HelmRepository', reconcileHelmRepository],
  ] as const) {
    const info = await findKind(ctx, 'source.toolkit.fluxcd.io/v1', kind);
    if (!info) continue;
    for (const obj of (await ctx.store.list(info)).items) {
      if (obj.spec?.suspend) continue;
      const key = `${kind}/${obj.metadata.namespace}/${obj.metadata.name}`;
      if (!due(obj, lastRun.get(key))) continue;
      // Success comes back at the interval (AlwaysRequeueResultBuilder); a failed fetch upstream at the
      // controller's error back-off, which the twin does not imitate: both at the twin's short interval.
      lastRun.set(key, { at: Date.now(), generation: obj.metadata.generation ?? 1, retryMs: intervalRequeue(obj.spec?.interval) });
      await f(ctx, info, obj);
    }
  }
}
