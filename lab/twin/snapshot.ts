// `k3s etcd-snapshot save|ls|list|delete` (docs cli/etcd-snapshot): real etcd snapshots of the local member
// in <data-dir>/server/db/snapshots, named <name>-<node>-<unix time> (default name on-demand).
import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, readdirSync, rmSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { type Settings, bool, str } from './config.ts';
import { clientURL } from './etcd/process.ts';
import { log } from './log.ts';
import { nodeIP, nodeName } from './server/netinfo.ts';
import { serverPaths } from './server/paths.ts';
import { labTool } from './tools.ts';

export function runSnapshot(s: Settings, args: string[]): void {
  const p = serverPaths(s);
  const sub = args[0] ?? 'save';
  const bind = str(s, 'bind-address');
  const endpoint = !bind || bind === '0.0.0.0' ? clientURL('127.0.0.1') : clientURL(nodeIP(s));
  if (sub === 'save') {
    mkdirSync(p.snapshots, { recursive: true, mode: 0o700 });
    const file = join(p.snapshots, `${str(s, 'name', 'on-demand')}-${nodeName(s)}-${Math.floor(Date.now() / 1000)}`);
    log.info(`Saving etcd snapshot to ${file}`);
    try {
      execFileSync(labTool('etcdctl'), [`--endpoints=${endpoint}`, 'snapshot', 'save', file], { stdio: ['ignore', 'ignore', 'pipe'] });
    } catch (e) {
      log.fatal(`Error: etcd-snapshot error: ${String((e as { stderr?: Buffer }).stderr ?? e).trim()}`);
    }
    log.info(`Snapshot ${file.split('/').pop()} saved.`);
    return;
  }
  if (sub === 'ls' || sub === 'list') {
    const files = existsSync(p.snapshots) ? readdirSync(p.snapshots).sort() : [];
    const rows = files.map((f) => {
      const st = statSync(join(p.snapshots, f));
      return [f, `file://${join(p.snapshots, f)}`, String(st.size), st.mtime.toISOString().replace(/\.\d+Z$/, 'Z')];
    });
    if (bool(s, 'o') || str(s, 'output') === 'json') {
      process.stdout.write(JSON.stringify(rows.map(([name, location, size, created]) => ({ name, location, size: Number(size), created }))) + '\n');
      return;
    }
    const table = [['Name', 'Location', 'Size', 'Created'], ...rows];
    const widths = table[0].map((_, i) => Math.max(...table.map((r) => r[i].length)));
    for (const r of table)
      process.stdout.write(
        r
          .map((c, i) => c.padEnd(widths[i]))
          .join(' ')
          .trimEnd() + '\n',
      );
    return;
  }
  if (sub === 'delete') {
    for (const name of args.slice(1)) {
      rmSync(join(p.snapshots, name), { force: true });
      log.info(`Snapshot ${name} deleted.`);
    }
    return;
  }
  log.fatal(`Error: unknown etcd-snapshot command ${sub}`);
}
