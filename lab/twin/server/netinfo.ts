// The node IP k3s picks when none is given: the address of the default-route interface
// (k3s pkg/util/net.go); failing that, the first non-loopback IPv4 address.
import { execFileSync } from 'node:child_process';
import { networkInterfaces, hostname } from 'node:os';
import { type Settings, list, str } from '../config.ts';

export function nodeIP(s: Settings): string {
  const given = list(s, 'node-ip')[0];
  if (given) return given;
  const ifaces = networkInterfaces();
  try {
    const out = execFileSync('ip', ['-o', '-4', 'route', 'show', 'default'], { encoding: 'utf8' });
    const dev = /\bdev (\S+)/.exec(out)?.[1];
    const a = dev ? ifaces[dev]?.find((x) => x.family === 'IPv4') : undefined;
    if (a) return a.address;
  } catch {
    /* no ip(8) or no default route */
  }
  for (const addrs of Object.values(ifaces)) {
    const a = addrs?.find((x) => x.family === 'IPv4' && !x.internal);
    if (a) return a.address;
  }
  return '127.0.0.1';
}

export function nodeName(s: Settings): string {
  return str(s, 'node-name', hostname()).toLowerCase();
}
