// The air-gap install of k3s on a server, as steps: binary, images, config, unit, env file, service.
// Shared by k3s-founder and k3s-join; only the config differs (cluster-init vs server: <founder>).
import { createHash } from 'node:crypto';
import { createReadStream, existsSync, readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';
import type { Change } from '../../src/engine/changes.ts';
import type { RunContext } from '../../src/engine/context.ts';
import type { HostRef, ProbeCommand, Step } from '../../src/engine/phase.ts';
import { shq } from '../../src/util/shell.ts';
import { managedFile } from '../steps/managed-file.ts';
import { joinAware, type JoinKey } from './join-mode.ts';
import { CONFIG_FILE, IMAGES_DIR, K3S_BIN, configFor, roleOf, serverEnv, serverUnit } from './render.ts';
import { readToken } from './token.ts';

export async function sha256File(path: string): Promise<string> {
  const hash = createHash('sha256');
  for await (const chunk of createReadStream(path)) hash.update(chunk);
  return hash.digest('hex');
}

/** Upload a local file when the host's copy differs (by sha256): a 70 MB binary is not sent twice. */
function uploadStep(id: string, title: string, file: (ctx: RunContext) => { local: string; remote: string } | undefined, factKey: string): Step<{ local: string; remote: string; sha: string; bytes: number } | undefined> {
  return {
    id,
    title,
    local: async (_h, ctx) => {
      const f = file(ctx);
      return f && { ...f, sha: await sha256File(f.local), bytes: statSync(f.local).size };
    },
    probe: (_h, ctx): Record<string, ProbeCommand> => {
      const f = file(ctx);
      return f ? { sum: { command: `sha256sum ${shq(f.remote)} 2>/dev/null | cut -d' ' -f1`, sudo: true } } : {};
    },
    plan: ({ probe, local }) => {
      if (!local) return { changes: [] };
      const current = probe.sum?.stdout.trim() || null;
      const changes: Change[] = current === local.sha ? [] : [{ kind: 'upload', localPath: local.local, path: local.remote, mode: '0755', sha256: local.sha, currentSha256: current, bytes: local.bytes }];
      return { changes, facts: { [factKey]: changes.length > 0 } };
    },
  };
}

/** The images tarball in the artifacts folder, if the operator put one there. */
function imagesTarball(ctx: RunContext): { local: string; remote: string } | undefined {
  const dir = ctx.inventory.derived.paths.k3sArtifacts;
  if (!existsSync(dir)) return undefined;
  const name = readdirSync(dir).find((f) => /^k3s-airgap-images-[\w-]+\.tar(\.zst|\.gz)?$/.test(f));
  return name ? { local: join(dir, name), remote: `${IMAGES_DIR}/${name}` } : undefined;
}

function fullToken(ctx: RunContext): string | undefined {
  const full = readToken(ctx.stateDir)?.full;
  if (full) ctx.redact(full);
  return full;
}

/** The token this host's config carries (the bare secret for the founder, the full token for joiners). */
export type TokenSource = (host: HostRef, ctx: RunContext) => string;

export function installSteps(token: TokenSource): Step<any>[] {
  return [
    uploadStep('binary', `k3s binary → ${K3S_BIN}`, (ctx) => ({ local: ctx.inventory.derived.paths.k3sBinary, remote: K3S_BIN }), 'k3sBinaryChanged'),
    uploadStep('images', 'air-gap images tarball', imagesTarball, 'k3sImagesChanged'),
    joinAware(managedFile<{ token: string; joinToken?: string; join?: JoinKey }>({
      id: 'config',
      title: `k3s configuration ${CONFIG_FILE}`,
      path: () => CONFIG_FILE,
      local: async (host, ctx) => ({ token: token(host, ctx), joinToken: fullToken(ctx) }),
      // A server that joins another carries the full token (it pins the CA), also the (acting) founder
      // that once joined a server (join-mode.ts).
      content: (l, host, ctx) => configFor(ctx.inventory, host, l.join && 'server' in l.join ? (l.joinToken ?? l.token) : l.token, l.join),
      mode: '0600',
      secret: true, // it carries the cluster token
      facts: (changed) => ({ k3sConfigChanged: changed }),
    })),
    managedFile({ id: 'unit', title: 'systemd unit', path: (h) => roleOf(h).unitFile, local: async () => undefined, content: (_l, h) => serverUnit(roleOf(h)), mode: '0644', facts: (changed) => ({ k3sUnitChanged: changed }) }),
    managedFile({ id: 'env', title: 'unit environment (0600)', path: (h) => roleOf(h).envFile, local: async () => undefined, content: (_l, h) => serverEnv(roleOf(h)), mode: '0600', facts: (changed) => ({ k3sEnvChanged: changed }) }),
    serviceStep,
  ];
}

/**
 * Enable and (re)start k3s. A changed config restarts it: k3s's installer would not ("No change
 * detected so skipping service start"), which leaves a new config silently unapplied. The start does
 * not block (--no-block): a joiner that cannot join never reports ready, and the gates name why.
 */
const serviceStep: Step = {
  id: 'service',
  title: 'k3s enabled and running the current configuration',
  probe: (host) => ({
    enabled: { command: `systemctl is-enabled ${roleOf(host).unit}` },
    active: { command: `systemctl is-active ${roleOf(host).unit}` },
    // Where the journal stands now: gates read only what k3s logs after this point.
    cursor: { command: `journalctl -u ${roleOf(host).unit} -n 0 --show-cursor -q --no-pager | sed -n 's/^-- cursor: //p'`, sudo: true },
  }),
  plan: ({ host, probe, ctx }) => {
    const changed = (k: string) => ctx.facts.get<boolean>(host.name, k) === true;
    const unitChanged = changed('k3sUnitChanged') || changed('k3sEnvChanged');
    const restart = unitChanged || changed('k3sConfigChanged') || changed('k3sBinaryChanged');
    const active = probe.active.stdout.trim() === 'active' || probe.active.stdout.trim() === 'activating';
    const unit = roleOf(host).unit;
    const changes: Change[] = [];
    if (unitChanged) changes.push({ kind: 'command', description: 'reload systemd units', command: 'systemctl daemon-reload', sudo: true });
    if (probe.enabled.stdout.trim() !== 'enabled') changes.push({ kind: 'command', description: 'enable k3s at boot', command: `systemctl enable ${unit}`, sudo: true });
    if (!active) changes.push({ kind: 'command', description: 'start k3s', command: `systemctl start --no-block ${unit}`, sudo: true });
    else if (restart) changes.push({ kind: 'command', description: 'restart k3s: its binary, unit or configuration changed', command: `systemctl restart --no-block ${unit}`, sudo: true });
    return { changes, facts: { journalCursor: probe.cursor.stdout.trim() } };
  },
};
