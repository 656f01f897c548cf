// What kube-vip does to the host's network, with the host's own tools: iproute2 for the address (kube-vip
// uses netlink for the same), iputils-arping for the gratuitous ARP (kube-vip sends it from its ARP manager).
import { execFile, execFileSync } from 'node:child_process';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { labTool } from '../../tools.ts';

export interface NetOps {
  linkExists(ifName: string): Promise<boolean>;
  defaultRouteInterface(): Promise<string | undefined>;
  addAddress(cidr: string, ifName: string): Promise<void>;
  deleteAddress(cidr: string, ifName: string): Promise<void>;
  /** For process exit: no event loop left. */
  deleteAddressNow(cidr: string, ifName: string): void;
  gratuitousArp(ifName: string, ip: string, count: number): Promise<void>;
}

const run = (cmd: string, args: string[]) =>
  new Promise<{ code: number; out: string }>((resolve) => {
    execFile(cmd, args, { timeout: 10_000 }, (err, stdout, stderr) => resolve({ code: err ? Number((err as any).code) || 1 : 0, out: `${stdout}${stderr}` }));
  });

export const hostNet: NetOps = {
  linkExists: async (ifName) => (await run('ip', ['link', 'show', 'dev', ifName])).code === 0,
  defaultRouteInterface: async () => /\bdev (\S+)/.exec((await run('ip', ['-o', '-4', 'route', 'show', 'default'])).out)?.[1],
  addAddress: async (cidr, ifName) => {
    const r = await run('ip', ['addr', 'add', cidr, 'dev', ifName]);
    if (r.code !== 0 && !/File exists/.test(r.out)) throw new Error(r.out.trim());
  },
  deleteAddress: async (cidr, ifName) => {
    await run('ip', ['addr', 'del', cidr, 'dev', ifName]);
  },
  deleteAddressNow: (cidr, ifName) => {
    try {
      execFileSync('ip', ['addr', 'del', cidr, 'dev', ifName], { stdio: 'ignore', timeout: 5000 });
    } catch {
      /* not there */
    }
  },
  gratuitousArp: async (ifName, ip, count) => {
    await run(labTool('arping'), ['-U', '-c', String(count), '-w', String(count + 1), '-I', ifName, ip]);
  },
};

/** For tests on one machine: interfaces always exist, addresses are lines in a file, ARP is not sent. */
export function fileNet(file: string): NetOps {
  const read = () => (existsSync(file) ? readFileSync(file, 'utf8').split('\n').filter(Boolean) : []);
  const del = (line: string) =>
    writeFileSync(
      file,
      read()
        .filter((l) => l !== line)
        .map((l) => `${l}\n`)
        .join(''),
    );
  return {
    linkExists: async (ifName) => ['lo', 'eth0'].includes(ifName),
    defaultRouteInterface: async () => 'eth0',
    addAddress: async (cidr, ifName) => {
      if (!read().includes(`${ifName} ${cidr}`)) writeFileSync(file, [...read(), `${ifName} ${cidr}`].map((l) => `${l}\n`).join(''));
    },
    deleteAddress: async (cidr, ifName) => del(`${ifName} ${cidr}`),
    deleteAddressNow: (cidr, ifName) => del(`${ifName} ${cidr}`),
    gratuitousArp: async () => undefined,
  };
}
