// The lab's GitOps git server as files (its sshd config, forced command, private accounts) and the lab's
// Flux install manifest: what an operator reading them, and Flux applying them, would see.
import { execFileSync } from 'node:child_process';
import { mkdtempSync, mkdirSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { parseAllDocuments } from 'yaml';
import { fluxInstallYaml } from '../../lab/flux-install.ts';
import { readCheckoutRevision } from '../../phases/flux/checkout-revision.ts';
import { publishGitopsSync } from '../../lab/gitops-publish.ts';
import { GITOPS_REPO, gitServerPaths, privateAccounts, serveScript, sshdConfig } from '../../lab/gitops-server.ts';

describe('lab git server files', () => {
  it('sshd accepts only key logins of git, with the forced read-only command', () => {
    const cfg = sshdConfig(gitServerPaths('/state'));
    expect(cfg).toContain('AllowUsers git\n');
    expect(cfg).toContain('PasswordAuthentication no\n');
    expect(cfg).toContain('UsePAM no\n');
    expect(cfg).toContain('ForceCommand /srv/git-serve\n');
    expect(cfg).toContain('HostKey /state/gitops-server/ssh_host_ed25519_key\n');
  });

  it('the forced command runs git-upload-pack of the one repository and refuses anything else', () => {
    const script = join(mkdtempSync(join(tmpdir(), 'serve-')), 'git-serve');
    writeFileSync(script, serveScript().replace(/exec git-upload-pack \S+/, 'echo served'), { mode: 0o755 });
    const run = (cmd: string) => {
      try {
        return execFileSync(script, { env: { SSH_ORIGINAL_COMMAND: cmd }, encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] }).trim();
      } catch (e: any) {
        return `refused: ${String(e.stderr).trim()}`;
      }
    };
    expect(run(`git-upload-pack '/${GITOPS_REPO}'`)).toBe('served');
    expect(run(`git-receive-pack '/${GITOPS_REPO}'`)).toBe(`refused: lab git server: only git-upload-pack of /${GITOPS_REPO} is served`);
    expect(run('sh -c id')).toMatch(/^refused/);
  });

  it('the private passwd adds git (and sshd when missing) and keeps the machine accounts', () => {
    const acc = privateAccounts('root:x:0:0:root:/root:/bin/bash\ngit:x:5:5::/x:/bin/false\n', 'root:x:0:\n');
    expect(acc.passwd.split('\n').filter((l) => l.startsWith('git:'))).toEqual(['git:x:64123:64123:lab GitOps server:/srv:/bin/sh']);
    expect(acc.passwd).toMatch(/^root:x:0:0:root:\/root:\/bin\/bash\n/);
    expect(acc.passwd).toMatch(/\nsshd:x:/);
    expect(acc.group).toBe('root:x:0:\ngit:x:64123:\n');
  });
});

describe('publishing the GitOps checkout', () => {
  it('the same content gets the same revision, other content another, and the branch points to it', () => {
    const dir = mkdtempSync(join(tmpdir(), 'publish-'));
    const repo = join(dir, 'repo.git');
    const checkout = join(dir, 'checkout');
    mkdirSync(join(checkout, 'clusters'), { recursive: true });
    writeFileSync(join(checkout, 'clusters', 'a.yaml'), 'a: 1\n');
    const first = publishGitopsSync(checkout, 'main', repo);
    expect(first).toMatch(/^[0-9a-f]{40}$/);
    expect(publishGitopsSync(checkout, 'main', repo)).toBe(first);
    writeFileSync(join(checkout, 'clusters', 'a.yaml'), 'a: 2\n');
    const second = publishGitopsSync(checkout, 'other', repo);
    expect(second).not.toBe(first);
    const git = (...a: string[]) => execFileSync('git', ['--git-dir', repo, ...a], { encoding: 'utf8' }).trim();
    expect(git('rev-parse', 'main')).toBe(first);
    expect(git('rev-parse', 'other')).toBe(second);
    expect(git('show', 'other:clusters/a.yaml')).toBe('a: 2');
    expect(git('log', '-1', '--format=%an <%ae> %aI', 'main')).toBe('bootstrap lab <lab@bootstrap.invalid> 2026-01-01T00:00:00+00:00');
  });

  it('the checkout holds the published commit as its branch, checked out and clean: the revision the flux phase expects Flux to serve', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'publish-'));
    const checkout = join(dir, 'checkout');
    mkdirSync(join(checkout, 'clusters'), { recursive: true });
    writeFileSync(join(checkout, 'clusters', 'a.yaml'), 'a: 1\n');
    const first = publishGitopsSync(checkout, 'main', join(dir, 'repo.git'));
    expect(await readCheckoutRevision(checkout, 'main')).toBe(`main@sha1:${first}`);
    writeFileSync(join(checkout, 'clusters', 'a.yaml'), 'a: 2\n');
    const second = publishGitopsSync(checkout, 'main', join(dir, 'repo.git'));
    expect(await readCheckoutRevision(checkout, 'main')).toBe(`main@sha1:${second}`);
    expect(execFileSync('git', ['-C', checkout, 'status', '--porcelain'], { encoding: 'utf8' })).toBe('');
  });
});

describe('lab Flux install manifest', () => {
  const docs = parseAllDocuments(fluxInstallYaml())
    .map((d) => d.toJS())
    .filter(Boolean);
  const names = (kind: string) => docs.filter((d) => d.kind === kind).map((d) => d.metadata.name);

  it('is shaped like flux install --export: namespace, CRDs, accounts, controllers', () => {
    expect(docs[0]).toMatchObject({ kind: 'Namespace', metadata: { name: 'flux-system' } });
    expect(names('CustomResourceDefinition')).toEqual(
      expect.arrayContaining([
        'gitrepositories.source.toolkit.fluxcd.io',
        'helmrepositories.source.toolkit.fluxcd.io',
        'ocirepositories.source.toolkit.fluxcd.io',
        'kustomizations.kustomize.toolkit.fluxcd.io',
        'helmreleases.helm.toolkit.fluxcd.io',
      ]),
    );
    const controllers = ['source-controller', 'kustomize-controller', 'helm-controller', 'notification-controller'];
    expect(names('Deployment')).toEqual(controllers);
    expect(names('ServiceAccount')).toEqual(controllers);
    expect(names('ClusterRoleBinding')).toEqual(['cluster-reconciler-flux-system', 'crd-controller-flux-system']);
    const sc = docs.find((d) => d.kind === 'Deployment' && d.metadata.name === 'source-controller');
    expect(sc.spec.template.spec.containers[0].image).toMatch(/^ghcr\.io\/fluxcd\/source-controller:v1\.\d+\.\d+$/);
    expect(sc.metadata.labels).toMatchObject({ 'app.kubernetes.io/part-of': 'flux', 'app.kubernetes.io/component': 'source-controller' });
  });

  it('serves v1 of the source and kustomize APIs and v2 of helm, with a status subresource', () => {
    const crd = (name: string) => docs.find((d) => d.metadata.name === name);
    expect(crd('gitrepositories.source.toolkit.fluxcd.io').spec.versions.find((v: any) => v.storage)).toMatchObject({
      name: 'v1',
      served: true,
      subresources: { status: {} },
    });
    expect(crd('kustomizations.kustomize.toolkit.fluxcd.io').spec.versions.map((v: any) => v.name)).toEqual(['v1']);
    expect(crd('helmreleases.helm.toolkit.fluxcd.io').spec.versions.map((v: any) => v.name)).toEqual(['v2']);
  });
});
