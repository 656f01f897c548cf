// Mounts the lab may leave on the machine itself (host mounts live in the hosts' private mount
// namespaces and vanish with them; debootstrap's proc/sys in a killed build do not).
import { readFileSync } from 'node:fs';
import { run } from './run.ts';

/** Mount points at or below `dir`, deepest first. */
export function mountsUnder(dir: string, mountinfo = readFileSync('/proc/self/mountinfo', 'utf8')): string[] {
  const points = mountinfo
    .split('\n')
    .map((l) => l.split(' ')[4])
    .filter((p): p is string => !!p)
    .map((p) => p.replace(/\\040/g, ' '))
    .filter((p) => p === dir || p.startsWith(`${dir}/`));
  return [...new Set(points)].sort((a, b) => b.length - a.length);
}

export async function unmountUnder(dir: string): Promise<void> {
  for (const p of mountsUnder(dir)) await run('umount', ['-l', p], { allowFail: true });
}
