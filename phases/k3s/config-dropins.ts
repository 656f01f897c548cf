// k3s reads /etc/rancher/k3s/config.yaml and then every *.yaml / *.yml file in config.yaml.d, in name order:
// a key in a later file REPLACES the value before it, a key ending in `+` appends to it (k3s-io/k3s @f6466040
// pkg/configfilearg/parser.go: dotDFiles, readConfigFile). A drop-in that an image, a cloud-init or another tool
// left on the host can so quietly replace what bootstrap writes (the cluster CIDR, the tls-san list that names
// the VIP, the server a node joins): the config file would be converged while k3s runs with something else.
// The config step reads the drop-ins' top-level keys (never their values: a drop-in may hold a token) and
// stops before writing when one replaces a key bootstrap renders. Appending (`tls-san+:`) and keys bootstrap
// does not render are the operator's own additions and pass.
// Not covered: a key spelled in a YAML flow mapping on one line (`{cluster-cidr: …}`) or a quoted key with
// an escape in it; k3s's own `--config` or K3S_CONFIG_FILE pointing elsewhere (bootstrap owns the unit and its env).
import { parse } from 'yaml';
import { CauseError } from '../../src/errors.ts';
import type { ProbeCommand, Step } from '../../src/engine/phase.ts';
import { CONFIG_FILE } from '../../src/k3s/paths.ts';

const DROPIN_DIR = `${CONFIG_FILE}.d`;

/**
 * Each drop-in k3s would read (a regular file named *.yaml or *.yml, any case), as `== <path>` and then its
 * top-level keys, one a line: a line that starts in column 0 with a key, optionally quoted, and a colon.
 */
export function dropinKeysProbe(dir = DROPIN_DIR): ProbeCommand {
  return {
    command: [
      `d=${dir}; [ -d "$d" ] || exit 0`,
      'for f in "$d"/*; do [ -f "$f" ] || continue',
      'case "$f" in *.[yY][aA][mM][lL]|*.[yY][mM][lL]) ;; *) continue ;; esac',
      `printf '== %s\\n' "$f"`,
      `sed -n "s/^[\\"']\\{0,1\\}\\([^\\"' #:-][^\\"':]*\\)[\\"']\\{0,1\\}[[:space:]]*:.*\\$/\\1/p" "$f"`,
      'done',
    ].join('; '),
    sudo: true,
  };
}

export interface Dropin {
  file: string;
  keys: string[];
}

/** Pure: dropinKeysProbe's output as files and their keys. */
export function dropinsOf(stdout: string): Dropin[] {
  const out: Dropin[] = [];
  for (const line of stdout.split('\n')) {
    if (line.startsWith('== ')) out.push({ file: line.slice(3), keys: [] });
    else if (line.trim() && out.length) out.at(-1)!.keys.push(line.trim());
  }
  return out;
}

// The one-letter aliases of the flags bootstrap renders (urfave/cli `Name: "token,t"`, k3s-io/k3s
// pkg/cli/cmds/agent.go and server.go): a config key is a flag's name, so `t:` sets the token as `token:` does.
const ALIASES: Record<string, string> = { t: 'token', s: 'server', i: 'node-ip' };

export interface Override {
  file: string;
  /** As the drop-in spells it. */
  key: string;
  /** The key of bootstrap's config.yaml it replaces. */
  replaces: string;
}

/** Pure: the drop-ins' keys that replace one bootstrap renders (`rendered`: its config.yaml for a server or an agent). */
export function overridesOf(rendered: string, dropins: Dropin[], role: 'server' | 'agent'): Override[] {
  const ours = new Set(Object.keys((parse(rendered) as Record<string, unknown> | null) ?? {}));
  // How a server joins is one setting in two keys: a drop-in's `server:` on the founder (which renders
  // cluster-init) turns it into a joiner as surely as replacing the key it has.
  if (role === 'server') ['cluster-init', 'server'].forEach((k) => ours.add(k));
  return dropins.flatMap((d) =>
    d.keys.flatMap((key) => {
      if (key.endsWith('+')) return [];
      const name = ALIASES[key] ?? key;
      return ours.has(name) ? [{ file: d.file, key, replaces: name }] : [];
    }),
  );
}

/** The cause: every override on the host, the first named in the message. */
function dropinStop(host: string, overrides: Override[]): CauseError {
  const said = overrides.map((o) => `${o.file} sets ${o.key}${o.key === o.replaces ? '' : ` (= ${o.replaces})`}`);
  return new CauseError('K3S_CONFIG_DROPIN_OVERRIDES', {
    host,
    message: `${host}: ${said[0]}, which replaces what bootstrap writes in ${CONFIG_FILE}${said.length > 1 ? ` (and ${said.length - 1} more)` : ''}`,
    evidence: {
      command: `sudo ls ${DROPIN_DIR}; sudo grep -n '^[^ #]' ${DROPIN_DIR}/*.yaml`,
      seen: `${said.join('; ')}: k3s reads ${DROPIN_DIR} after ${CONFIG_FILE}, and a key without "+" replaces the value before it`,
    },
  });
}

/**
 * The config step, refusing to write while a drop-in replaces what it renders (`rendered`: the content the
 * step would write, from the plan's own input). Check mode sees the same stop: the probe is read-only.
 */
export function dropinsChecked<L>(step: Step<L>, rendered: (input: Parameters<Step<L>['plan']>[0]) => string): Step<L> {
  return {
    ...step,
    probe: (host, ctx) => ({ ...step.probe?.(host, ctx), dropins: dropinKeysProbe() }),
    plan: (input) => {
      const overrides = overridesOf(rendered(input), dropinsOf(input.probe.dropins?.stdout ?? ''), input.host.role);
      return overrides.length ? { changes: [], stops: [dropinStop(input.host.name, overrides)] } : step.plan(input);
    },
  };
}
