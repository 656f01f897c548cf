// What a host may carry beside the files bootstrap writes for k3s, and that would make k3s run with something else
// while those files look converged (an image, a cloud-init or another installer may have left them):
// - configuration drop-ins: k3s reads /etc/rancher/k3s/config.yaml and then every *.yaml / *.yml file in
//   config.yaml.d, in name order; a key in a later file REPLACES the value before it, a key ending in `+` appends
//   to it (k3s-io/k3s @f6466040 pkg/configfilearg/parser.go: dotDFiles, readConfigFile);
// - systemd drop-ins of k3s's unit (<unit>.d/*.conf in /etc, /run, /usr/local/lib and /usr/lib's systemd/system):
//   an ExecStart= there replaces bootstrap's command, whose flags win over every config file (the parser puts the
//   files' values right after the subcommand, before the command line's own flags); K3S_CONFIG_FILE in an
//   Environment= or an EnvironmentFile= points k3s at another config file (findConfigFileFlag reads the variable
//   first: DefaultParser's EnvName in pkg/configfilearg/defaultparser.go).
// The config step reads only names (keys, directives, variable names: never values, a drop-in may hold a token)
// and stops before writing when one replaces what bootstrap renders. Appending (`tls-san+:`), keys bootstrap does
// not render, and other directives (a LimitNOFILE, a proxy's variables) are the operator's own and pass.
// Not covered: a key spelled in a one-line YAML flow mapping, or quoted with an escape in it; other K3S_* variables
// (a flag's value from config.yaml wins over its variable: urfave/cli takes the command line first); drop-ins for
// every service (service.d/); an EnvironmentFile= path with systemd specifiers (%N) is not expanded, so not read.
import { parse } from 'yaml';
import { CauseError } from '../../src/errors.ts';
import type { HostRef, ProbeCommand, Step } from '../../src/engine/phase.ts';
import { CONFIG_FILE, roleOf } from '../../src/k3s/paths.ts';

const CONFIG_DIR = `${CONFIG_FILE}.d`;
const UNIT_DIRS = ['/etc/systemd/system', '/run/systemd/system', '/usr/local/lib/systemd/system', '/usr/lib/systemd/system'];

/**
 * Each config drop-in k3s would read (a regular file named *.yaml or *.yml, any case; the .yml ones after), as
 * `== <path>` and then its top-level keys, one a line: a line that starts in column 0 with a key, optionally
 * quoted, and a colon.
 */
export function configDropinsProbe(dir = CONFIG_DIR): ProbeCommand {
  return {
    command: [
      `d=${dir}; [ -d "$d" ] || exit 0`,
      'for f in "$d"/*.[yY][aA][mM][lL] "$d"/*.[yY][mM][lL]; do [ -f "$f" ] || continue',
      `printf '== %s\\n' "$f"`,
      `sed -n "s/^[\\"']\\{0,1\\}\\([^\\"' #:-][^\\"':]*\\)[\\"']\\{0,1\\}[[:space:]]*:.*\\$/\\1/p" "$f"`,
      'done',
    ].join('; '),
    sudo: true,
  };
}

/** awk: a unit drop-in's ExecStart=, and the variable names its Environment= and EnvironmentFile= set (never values). */
const UNIT_NAMES_AWK = [
  'function names(s, n, i, t, a) { n = split(s, a, /[ \\t]+/); for (i = 1; i <= n; i++) { t = a[i]; sub(/^["\\047]/, "", t);',
  'if (t ~ /^[A-Za-z_][A-Za-z0-9_]*=/) { sub(/=.*/, "", t); printf " %s", t } } }',
  '/^[ \\t]*ExecStart[ \\t]*=/ { print "ExecStart"; next }',
  '/^[ \\t]*Environment[ \\t]*=/ { v = $0; sub(/^[ \\t]*Environment[ \\t]*=/, "", v); printf "Environment"; names(v); print ""; next }',
  '/^[ \\t]*EnvironmentFile[ \\t]*=/ { p = $0; sub(/^[ \\t]*EnvironmentFile[ \\t]*=[ \\t]*-?/, "", p); sub(/[ \\t]+$/, "", p); printf "EnvironmentFile %s", p;',
  'while ((getline l < p) > 0) { sub(/^[ \\t]*export[ \\t]+/, "", l); names(l) } close(p); print ""; next }',
].join(' ');

/** Each systemd drop-in of `unit` (*.conf in its .d folders), as `== <path>` and then awk's lines (UNIT_NAMES_AWK). */
export function unitDropinsProbe(unit: string, dirs = UNIT_DIRS): ProbeCommand {
  return {
    command: [
      `for f in ${dirs.map((d) => `${d}/${unit}.d/*.conf`).join(' ')}; do [ -f "$f" ] || continue`,
      `printf '== %s\\n' "$f"`,
      `awk '${UNIT_NAMES_AWK}' "$f"`,
      'done',
    ].join('; '),
    sudo: true,
  };
}

export interface Dropin {
  file: string;
  /** Config drop-in: its top-level keys. Unit drop-in: awk's lines (`ExecStart`, `Environment A B`, `EnvironmentFile <path> A B`). */
  lines: string[];
}

/** Pure: a drop-in probe's output as files and their lines. */
export function dropinsOf(stdout: string): Dropin[] {
  const out: Dropin[] = [];
  for (const line of stdout.split('\n')) {
    if (line.startsWith('== ')) out.push({ file: line.slice(3), lines: [] });
    else if (line.trim() && out.length) out.at(-1)!.lines.push(line.trim());
  }
  return out;
}

// The one-letter aliases of the flags bootstrap renders (urfave/cli `Name: "token,t"`, k3s-io/k3s
// pkg/cli/cmds/agent.go and server.go): a config key is a flag's name, so `t:` sets the token as `token:` does.
const ALIASES: Record<string, string> = { t: 'token', s: 'server', i: 'node-ip' };

export interface Override {
  file: string;
  /** What the drop-in sets, as it spells it (a key, `ExecStart`, a variable). */
  sets: string;
  /** What of bootstrap's it replaces. */
  replaces: string;
}

/** Pure: the config drop-ins' keys that replace one bootstrap renders (`rendered`: its config.yaml for the host's role). */
export function configOverrides(rendered: string, dropins: Dropin[], role: 'server' | 'agent'): Override[] {
  const ours = new Set(Object.keys((parse(rendered) as Record<string, unknown> | null) ?? {}));
  // How a server joins is one setting in two keys: a drop-in's `server:` on the founder (which renders
  // cluster-init) turns it into a joiner as surely as replacing the key it has.
  if (role === 'server') ['cluster-init', 'server'].forEach((k) => ours.add(k));
  return dropins.flatMap((d) =>
    d.lines.flatMap((key) => {
      if (key.endsWith('+')) return [];
      const name = ALIASES[key] ?? key;
      return ours.has(name) ? [{ file: d.file, sets: key, replaces: `${name} in ${CONFIG_FILE}` }] : [];
    }),
  );
}

/** Pure: the unit drop-ins' settings that replace what bootstrap's unit runs (`unit`: its file). */
export function unitOverrides(unitFile: string, dropins: Dropin[]): Override[] {
  return dropins.flatMap((d) =>
    d.lines.flatMap((line): Override[] => {
      const [directive, ...rest] = line.split(' ');
      if (directive === 'ExecStart') return [{ file: d.file, sets: 'ExecStart', replaces: `the command ${unitFile} runs (its flags win over ${CONFIG_FILE})` }];
      const names = directive === 'EnvironmentFile' ? rest.slice(1) : directive === 'Environment' ? rest : [];
      return names.includes('K3S_CONFIG_FILE')
        ? [
            {
              file: directive === 'EnvironmentFile' ? `${d.file} (EnvironmentFile ${rest[0]})` : d.file,
              sets: 'K3S_CONFIG_FILE',
              replaces: `${CONFIG_FILE} as the file k3s reads`,
            },
          ]
        : [];
    }),
  );
}

function dropinStop(host: HostRef, overrides: Override[]): CauseError {
  const said = overrides.map((o) => `${o.file} sets ${o.sets}${ALIASES[o.sets] ? ` (= ${ALIASES[o.sets]})` : ''}, which replaces ${o.replaces}`);
  const unit = roleOf(host).unit;
  return new CauseError('K3S_DROPIN_OVERRIDES', {
    host: host.name,
    message: `${host.name}: ${said[0]}${said.length > 1 ? ` (and ${said.length - 1} more)` : ''}`,
    evidence: {
      command: `sudo grep -n '^[^ #]' ${CONFIG_DIR}/*.yaml; systemctl cat ${unit}`,
      seen: said.join('; '),
    },
  });
}

/**
 * The config step, refusing to write while a drop-in replaces what bootstrap renders for k3s (`rendered`: the
 * content the step would write, from the plan's own input). Check mode sees the same stop: the probes only read.
 */
export function dropinsChecked<L>(step: Step<L>, rendered: (input: Parameters<Step<L>['plan']>[0]) => string): Step<L> {
  return {
    ...step,
    probe: (host, ctx) => ({ ...step.probe?.(host, ctx), configDropins: configDropinsProbe(), unitDropins: unitDropinsProbe(roleOf(host).unit) }),
    plan: (input) => {
      const { host, probe } = input;
      const all = [
        ...configOverrides(rendered(input), dropinsOf(probe.configDropins?.stdout ?? ''), host.role),
        ...unitOverrides(roleOf(host).unitFile, dropinsOf(probe.unitDropins?.stdout ?? '')),
      ];
      // Each once (a unit drop-in clears ExecStart= before it sets its own).
      const overrides = all.filter((o, i) => all.findIndex((x) => x.file === o.file && x.sets === o.sets) === i);
      return overrides.length ? { changes: [], stops: [dropinStop(host, overrides)] } : step.plan(input);
    },
  };
}
