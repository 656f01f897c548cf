// Entry point of the lab's k3s twin: the one executable installed as /usr/local/bin/k3s.
import { basename } from 'node:path';
import { loadSettings, parseFlags } from './config.ts';
import { runAgent } from './agent.ts';
import { runCrictl } from './crictl.ts';
import { runKubectl } from './kubectl.ts';
import { log } from './log.ts';
import { runServer } from './server/run.ts';
import { startAddons, type Addons } from './addons/index.ts';
import { runSnapshot } from './snapshot.ts';
import { runShim } from './runtime/shim.ts';
import { SHIM_NAME } from './runtime/tasks.ts';
import { K3S_COMMIT, K3S_VERSION, RELEASE } from './version.ts';

const VERSION_TEXT = `k3s version ${K3S_VERSION} (${K3S_COMMIT})\ngo version ${RELEASE.go}\n`;

async function main(argv: string[]): Promise<void> {
  if (basename(process.argv[1] ?? '') === 'kubectl') runKubectl(argv);
  if (basename(process.argv[1] ?? '') === SHIM_NAME) return runShim(argv);
  const [cmd, ...rest] = argv;
  if (cmd === '--version' || cmd === '-v' || cmd === 'version') {
    process.stdout.write(VERSION_TEXT);
    return;
  }
  switch (cmd) {
    case 'server': {
      const { flags } = parseFlags(rest);
      // The add-on twins (kube-vip, helm-controller, Cilium agent) start once the API serves.
      let addons: Addons | undefined;
      return runServer(loadSettings(flags), {
        onStarted: (ctx) => void (addons = startAddons(ctx)),
        handleApi: async (req, res) => Boolean(addons && (await addons.handle(req, res))),
      });
    }
    case 'agent': {
      const { flags } = parseFlags(rest);
      return runAgent(loadSettings(flags));
    }
    case 'kubectl':
      return runKubectl(rest);
    case 'crictl':
      process.exitCode = await runCrictl(rest, { out: (t) => process.stdout.write(t), err: (t) => process.stderr.write(t), now: () => new Date() });
      return;
    case 'etcd-snapshot': {
      const { flags, positional } = parseFlags(rest);
      return runSnapshot(loadSettings(flags), positional);
    }
    default:
      process.stdout.write(
        `NAME:\n   k3s - Kubernetes, but small and simple (lab twin)\n\nUSAGE:\n   k3s [global options] command [command options]\n\nVERSION:\n   ${K3S_VERSION} (${K3S_COMMIT})\n\nCOMMANDS:\n   server         Run management server\n   agent          Run node agent\n   kubectl        Run kubectl\n   crictl         Run crictl\n   etcd-snapshot  Manage etcd snapshots\n`,
      );
      if (cmd && cmd !== 'help' && cmd !== '--help' && cmd !== '-h') {
        process.stderr.write(`Incorrect Usage: command ${cmd} not known to the lab's k3s twin\n`);
        process.exit(1);
      }
  }
}

main(process.argv.slice(2)).catch((e) => log.fatal(String(e?.stack ?? e)));
