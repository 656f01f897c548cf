// `npm run lab -- <command>`: the operator's interface to the lab.
import { spawnSync } from 'node:child_process';
import { parseArgs } from 'node:util';
import { bastion, down, fault, gitServerStatus, host, requireLab, sshArgs, status, up, wipe } from './api.ts';
import { LabCommandFailed, LabUnavailable, LabUsage } from './errors.ts';

const USAGE = `usage: npm run lab -- <command>
  up [--servers N] [--agents M] [--bastion] [--inventory FILE]
                                                     boot the lab (default 3 servers, 0 agents); --bastion:
                                                     the hosts behind one bastion, unreachable from here
  down                                               remove everything the lab made
  status                                             each host: power, address, systemd state
  ssh <host> [command...]                            SSH to a host as ops (strict host keys)
  fault <host> <kind> [arg]                          stop | start | partition | heal | block-port <port> |
                                                     unblock-port <port> | cut-peers | heal-peers |
                                                     block-egress <address>:<port> |
                                                     unblock-egress <address>:<port> | clock-skew <seconds> |
                                                     fill-disk | free-disk | rename-nic <name> | wipe
  wipe <host>                                        reinstall a host: fresh disk and host key, same address`;

const say = (line: string) => process.stderr.write(`${line}\n`);

async function dispatch(argv: string[]): Promise<number> {
  const [cmd, ...rest] = argv;
  if (!cmd || cmd === 'help' || cmd === '--help' || cmd === '-h') {
    process.stdout.write(`${USAGE}\n`);
    return cmd ? 0 : 64;
  }
  requireLab();
  switch (cmd) {
    case 'up': {
      const { values } = parseArgs({
        args: rest,
        options: { servers: { type: 'string' }, agents: { type: 'string' }, bastion: { type: 'boolean' }, inventory: { type: 'string' } },
      });
      const t0 = Date.now();
      const res = await up({
        servers: values.servers === undefined ? undefined : Number(values.servers),
        agents: values.agents === undefined ? undefined : Number(values.agents),
        bastion: values.bastion,
        inventory: values.inventory,
        log: say,
      });
      const jump = bastion();
      say(
        `lab ${res.reused ? 'already up' : 'up'}: ${res.hosts.map((h) => `${h.name} ${h.address}`).join(', ')}${jump ? `, behind ${jump.name} ${jump.address}` : ''} (${((Date.now() - t0) / 1000).toFixed(1)} s)`,
      );
      process.stdout.write(`${res.inventory}\n`);
      return 0;
    }
    case 'down': {
      const t0 = Date.now();
      await down();
      say(`lab down (${((Date.now() - t0) / 1000).toFixed(1)} s)`);
      return 0;
    }
    case 'status': {
      const rows = await status();
      if (rows.length === 0) {
        process.stdout.write('the lab is not up\n');
        return 0;
      }
      for (const r of rows) {
        process.stdout.write(
          `${r.name.padEnd(16)} ${r.address.padEnd(11)} ${(r.running ? 'running' : 'stopped').padEnd(8)} systemd=${r.systemd.padEnd(9)} nic=${r.nic} ${r.cable}\n`,
        );
      }
      const git = await gitServerStatus();
      process.stdout.write(`${'gitops-server'.padEnd(16)} ${git.address.padEnd(11)} ${(git.running ? 'running' : 'stopped').padEnd(8)} ${git.url}\n`);
      return 0;
    }
    case 'ssh': {
      const [name, ...command] = rest;
      if (!name) throw new LabUsage('ssh needs a host');
      const args = sshArgs(host(name).address);
      if (command.length === 0) args.unshift('-t');
      return spawnSync('ssh', [...args, ...command], { stdio: 'inherit' }).status ?? 1;
    }
    case 'fault': {
      const [name, kind, arg] = rest;
      if (!name || !kind) throw new LabUsage('fault needs a host and a kind');
      await fault(name, kind, arg);
      say(`${name}: ${kind}${arg !== undefined ? ` ${arg}` : ''} done`);
      return 0;
    }
    case 'wipe': {
      const [name] = rest;
      if (!name) throw new LabUsage('wipe needs a host');
      await wipe(name);
      say(`${name}: reinstalled (new host key in the lab known_hosts)`);
      return 0;
    }
    default:
      throw new LabUsage(`unknown command ${cmd}\n${USAGE}`);
  }
}

export async function main(argv: string[]): Promise<number> {
  try {
    return await dispatch(argv);
  } catch (err) {
    if (err instanceof LabUnavailable) {
      say(`lab: ${err.message}`);
      return 69;
    }
    if (err instanceof LabUsage || err instanceof RangeError) {
      say(`lab: ${err.message}`);
      return 64;
    }
    if (err instanceof LabCommandFailed) {
      say(`lab: ${err.message}`);
      return 1;
    }
    say(`lab: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}`);
    return 1;
  }
}
