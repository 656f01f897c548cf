// The air-gap install of k3s on a server, as steps: binary, images, config, unit, env file, service.
// Shared by k3s-founder and k3s-join; only the config differs (cluster-init vs server: <founder>).
import { existsSync, readdirSync, statSync } from 'node:fs';
import { basename, join } from 'node:path';
import type { Change } from '../../src/engine/changes.ts';
import type { LocalContext, ReadContext } from '../../src/engine/context.ts';
import type { HostFact } from '../../src/engine/facts.ts';
import type { HostRef, ProbeCommand, Step } from '../../src/engine/phase.ts';
import { sumsProbe } from '../../src/engine/sum-stamps.ts';
import { imagesPlaced } from '../../src/images/pull-cause.ts';
import { managedFile } from '../steps/managed-file.ts';
import { dropinsChecked } from './dropins.ts';
import { binaryChanged, configChanged, envChanged, joinsThrough, journalCursor, unitChanged } from './facts.ts';
import { rollingLeftOut } from './rolling-facts.ts';
import { CauseError } from '../../src/errors.ts';
import { joinAware, type JoinKey } from './join-mode.ts';
import { configFor, serverEnv, serverUnit } from './render.ts';
import { CONFIG_FILE, IMAGES_DIR, K3S_BIN, roleOf } from '../../src/k3s/paths.ts';
import { unitActiveProbe, unitRuns } from '../../src/k3s/unit-state.ts';
import { readToken, tokenChange, type ClusterToken } from '../../src/k3s/token.ts';

import { sha256FileOnce } from '../../src/util/sha256-file.ts';
import { sha256FromList } from '../../src/artifacts/sha256-list.ts';

type Upload = { local: string; remote: string; mode: string };

/** Upload local files when the host's copy differs (by sha256): a 70 MB binary is not sent twice. */
function uploadStep(
  id: string,
  title: string,
  files: (ctx: ReadContext) => Upload[],
  placed: HostFact<boolean>,
  /** The fact stays true once a step placed the files this run: a later phase finding them in place does not unsay it. */
  sticky = false,
): Step<(Upload & { sha: string; bytes: number })[]> {
  return {
    id,
    title,
    local: async (_h, ctx) => Promise.all(files(ctx).map(async (f) => ({ ...f, sha: await sha256FileOnce(f.local), bytes: statSync(f.local).size }))),
    // The sums of all of the step's files in one probe (a missing one prints nothing), read from their upload
    // stamps while the files are unchanged: a converged run hashes nothing.
    probe: (_h, ctx): Record<string, ProbeCommand> => {
      const remote = files(ctx).map((f) => f.remote);
      return remote.length ? { sums: { command: sumsProbe(remote), sudo: true } } : {};
    },
    plan: ({ host, probe, local, ctx }) => {
      const changes: Change[] = [];
      local.forEach((f) => {
        const current = sha256FromList(probe.sums?.stdout ?? '', f.remote) ?? null;
        if (current !== f.sha)
          changes.push({ kind: 'upload', localPath: f.local, path: f.remote, mode: f.mode, sha256: f.sha, currentSha256: current, bytes: f.bytes });
      });
      return { changes, facts: [placed(changes.length > 0 || (sticky && ctx.facts?.get(host.name, placed) === true))] };
    },
  };
}

/**
 * The images k3s imports from agent/images at start (and within seconds of a new file, k3s's image
 * watcher): the air-gap tarball in the artifacts folder, if the operator put one there, and the add-on
 * archives of k3s.imageArchives, on every node (any node may run any add-on's pod).
 */
function imageArchives(ctx: ReadContext): Upload[] {
  const dir = ctx.inventory.derived.paths.k3sArtifacts;
  const out: Upload[] = [];
  const name = existsSync(dir) ? readdirSync(dir).find((f) => /^k3s-airgap-images-[\w-]+\.tar(\.zst|\.gz)?$/.test(f)) : undefined;
  if (name) out.push({ local: join(dir, name), remote: `${IMAGES_DIR}/${name}`, mode: '0644' });
  for (const a of ctx.inventory.derived.paths.imageArchives ?? []) out.push({ local: a.path, remote: `${IMAGES_DIR}/${basename(a.path)}`, mode: '0644' });
  return out;
}

function fullToken(ctx: LocalContext): string | undefined {
  const full = readToken(ctx.stateDir)?.full;
  if (full) ctx.redact(full);
  return full;
}

/**
 * The token this host's config carries (the bare secret for the founder, the full token for joiners), and
 * with `save` the token the state folder must get first (a new environment's, a restore's): the config
 * step's plan writes it (a local change) before the config that carries it.
 */
export type TokenSource = (host: HostRef, ctx: LocalContext) => string | { secret: string; save?: ClusterToken };

type ConfigLocal = { token: string; save?: ClusterToken; joinToken?: string; join?: JoinKey };

/**
 * The config.yaml the host gets. A server that joins another carries the full token (it pins the CA), also the
 * (acting) founder that once joined a server (join-mode.ts).
 */
function configContent(l: ConfigLocal, host: HostRef, ctx: ReadContext): string {
  return configFor(ctx.inventory, host, l.join && 'server' in l.join ? (l.joinToken ?? l.token) : l.token, l.join);
}

/** The config step with the state folder's token written first when the token source says so. */
function savingToken(step: Step<ConfigLocal>): Step<ConfigLocal> {
  return {
    ...step,
    plan: (input) => {
      const plan = step.plan(input);
      const save = input.local.save;
      return save ? { ...plan, changes: [...tokenChange(input.ctx.stateDir, save), ...plan.changes] } : plan;
    },
  };
}

/**
 * A step whose change restarts k3s (its binary, configuration, unit, environment), refused on a node where k3s
 * runs when the build leaves the rolling change out (--from or --only past rolling-servers): the rolling phases
 * drain such a node and restart one at a time, with quorum checked and gates after; the install phases would
 * restart every changed node at once, undrained. Refused before the step writes anything, so the next full
 * run still sees the change to roll.
 */
function restartsK3s<L>(step: Step<L>, what: string): Step<L> {
  return {
    ...step,
    // The service step's own probe: asked once for both (src/engine/probe-memo.ts).
    probe: (host, ctx) => ({ ...step.probe?.(host, ctx), k3sActive: unitActiveProbe(roleOf(host).unit) }),
    plan: (input) => {
      const plan = step.plan(input);
      const running = unitRuns(input.probe.k3sActive?.stdout);
      if (!running || input.ctx.facts.run(rollingLeftOut) !== true || !plan.changes.some((c) => c.kind !== 'local')) return plan;
      const unit = roleOf(input.host).unit;
      return {
        changes: [],
        stops: [
          new CauseError('RESTART_NEEDS_ROLLING', {
            host: input.host.name,
            message: `${input.host.name}: k3s runs and its ${what} would change, which restarts it; this run leaves out the rolling change`,
            evidence: {
              seen: `${unit} is ${input.probe.k3sActive.stdout.trim()} on ${input.host.name} and its ${what} differs from the inventory's; the run's phases (--from/--only) leave out rolling-servers and rolling-agents, which drain and restart running nodes one at a time`,
              command: unitActiveProbe(unit).command,
            },
          }),
        ],
      };
    },
  };
}

export function installSteps(token: TokenSource): Step<any>[] {
  return [
    restartsK3s(
      uploadStep(
        'binary',
        `k3s binary → ${K3S_BIN}`,
        (ctx) => [{ local: ctx.inventory.derived.paths.k3sBinary, remote: K3S_BIN, mode: '0755' }],
        binaryChanged,
      ),
      `binary (${K3S_BIN})`,
    ),
    // Sticky: the rolling change places them on a running node, the install phase after it finds them in place,
    // and the image gates must still know that k3s imports them within seconds (src/images/pull-cause.ts).
    uploadStep('images', `air-gap image archives → ${IMAGES_DIR}`, imageArchives, imagesPlaced, true),
    restartsK3s(
      savingToken(
        joinAware(
          // A drop-in replacing what this file says (config.yaml.d) or what the unit runs (<unit>.d) would leave
          // them converged and k3s running with something else: refused before the file is written (dropins.ts).
          dropinsChecked(
            managedFile<ConfigLocal>({
              id: 'config',
              title: `k3s configuration ${CONFIG_FILE}`,
              path: () => CONFIG_FILE,
              local: async (host, ctx) => {
                const t = token(host, ctx);
                return { ...(typeof t === 'string' ? { token: t } : { token: t.secret, save: t.save }), joinToken: fullToken(ctx) };
              },
              content: configContent,
              mode: '0600',
              secret: true, // it carries the cluster token
              facts: (changed) => [configChanged(changed)],
            }),
            ({ local, host, ctx }) => configContent(local, host, ctx),
          ),
        ),
      ),
      `configuration (${CONFIG_FILE})`,
    ),
    restartsK3s(
      managedFile({
        id: 'unit',
        title: 'systemd unit',
        path: (h) => roleOf(h).unitFile,
        local: async () => undefined,
        content: (_l, h) => serverUnit(roleOf(h)),
        mode: '0644',
        facts: (changed) => [unitChanged(changed)],
      }),
      'systemd unit',
    ),
    restartsK3s(
      managedFile({
        id: 'env',
        title: 'unit environment (0600)',
        path: (h) => roleOf(h).envFile,
        local: async () => undefined,
        content: (_l, h) => serverEnv(roleOf(h)),
        mode: '0600',
        facts: (changed) => [envChanged(changed)],
      }),
      'unit environment',
    ),
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
    active: unitActiveProbe(roleOf(host).unit),
    // Where the journal stands now: gates read only what k3s logs after this point. An answer the run
    // asked ahead (src/engine/prefetch.ts) is as good: it is kept only while nothing changed, so a start
    // here finds k3s stopped since (a stopped unit logs nothing), and a restart follows a change (asked again).
    // journalctl prints `-- cursor: <cursor>` (picked out here, not by a sed on the host).
    cursor: { command: `journalctl -u ${roleOf(host).unit} -n 0 --show-cursor -q --no-pager`, sudo: true },
  }),
  plan: ({ host, probe, ctx }) => {
    // Absent: the step that sets it did not run on this host this run, so it changed nothing.
    const changed = (fact: HostFact<boolean>) => ctx.facts.get(host.name, fact) === true;
    const unitOrEnv = changed(unitChanged) || changed(envChanged);
    const restart = unitOrEnv || changed(configChanged) || changed(binaryChanged);
    const active = unitRuns(probe.active.stdout);
    const unit = roleOf(host).unit;
    const changes: Change[] = [];
    if (unitOrEnv) changes.push({ kind: 'command', description: 'reload systemd units', command: 'systemctl daemon-reload', sudo: true });
    if (probe.enabled.stdout.trim() !== 'enabled')
      changes.push({ kind: 'command', description: 'enable k3s at boot', command: `systemctl enable ${unit}`, sudo: true });
    const joins = ctx.facts.get(host.name, joinsThrough);
    if (!active)
      changes.push({
        kind: 'command',
        description: joins ? `start k3s: it joins the cluster through ${joins}` : 'start k3s',
        command: `systemctl start --no-block ${unit}`,
        sudo: true,
      });
    else if (restart)
      changes.push({
        kind: 'command',
        description: 'restart k3s: its binary, unit or configuration changed',
        command: `systemctl restart --no-block ${unit}`,
        sudo: true,
      });
    return { changes, facts: [journalCursor(/^-- cursor: (.*)$/m.exec(probe.cursor.stdout)?.[1]?.trim() ?? '')] };
  },
};
