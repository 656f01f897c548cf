// A file the engine owns on a host: probe its content and mode, plan a write when either differs.
// Reused by every phase that renders configuration (sysctl, k3s config, units, manifests).
import { fileChange } from '../../src/engine/changes.ts';
import type { HostRef, Step } from '../../src/engine/phase.ts';
import type { LocalContext, ReadContext } from '../../src/engine/context.ts';
import type { FactValue } from '../../src/engine/facts.ts';
import { shq } from '../../src/util/shell.ts';

export interface ManagedFile<L> {
  id: string;
  title: string;
  path: (host: HostRef, ctx: ReadContext) => string;
  /** The desired content; may read local files (runs in check mode too, changes nothing). */
  local: (host: HostRef, ctx: LocalContext) => Promise<L>;
  content: (local: L, host: HostRef, ctx: ReadContext) => string;
  mode: string;
  owner?: string;
  secret?: boolean;
  /** Facts for later steps (e.g. "k3s config changed: restart"). */
  facts?: (changed: boolean) => FactValue<'host'>[];
}

export function managedFile<L>(spec: ManagedFile<L>): Step<L> {
  return {
    id: spec.id,
    title: spec.title,
    local: spec.local,
    probe: (host, ctx) => {
      const p = shq(spec.path(host, ctx));
      // First line: the mode; the rest: the content as it is, or for a secret its sha256 only (a secret
      // read back would sit in the probe's output, and so in the run log and any failure excerpt).
      // Exit 1: no such file.
      const body = spec.secret ? `sha256sum < ${p} | cut -d' ' -f1` : `cat ${p}`;
      return { file: { command: `if [ -f ${p} ]; then stat -c '%a' ${p} && ${body}; else exit 1; fi`, sudo: true } };
    },
    plan: ({ host, probe, local, ctx }) => {
      const seen = probe.file;
      const exists = seen.code === 0;
      const nl = seen.stdout.indexOf('\n');
      const rest = nl < 0 ? '' : seen.stdout.slice(nl + 1);
      const mode = seen.stdout.slice(0, nl < 0 ? undefined : nl);
      const current = !exists ? { content: null } : spec.secret ? { content: null, sha256: rest.trim(), mode } : { content: rest, mode };
      const changes = fileChange(spec.path(host, ctx), spec.content(local, host, ctx), current, { mode: spec.mode, owner: spec.owner, secret: spec.secret });
      return { changes, facts: spec.facts?.(changes.length > 0) };
    },
  };
}
