// Entry point of the lab's k3s twin: the one executable installed as /usr/local/bin/k3s.
import { basename } from 'node:path';
import { loadSettings, parseFlags, str, type Settings } from './config.ts';
import { runAgent } from './agent.ts';
import { runCrictl } from './crictl.ts';
import { runKubectl } from './kubectl.ts';
import { log } from './log.ts';
import { runServer } from './server/run.ts';
import { startAddons, type Addons } from './addons/index.ts';
import { runSnapshot } from './snapshot.ts';
import { runShim } from './runtime/shim.ts';
import { SHIM_NAME } from './runtime/tasks.ts';
import { unpackBinaries } from './runtime/data-dir.ts';
import { K3S_COMMIT, K3S_VERSION, RELEASE } from './version.ts';

/**
 * k3s unpacks its data (the binaries `k3s crictl` and the kubelet's runtime exec) when a server or an agent
 * starts (k3s-io/k3s cmd/k3s/main.go stageAndRun → extract). Not in tests on one machine
 * (K3S_TWIN_ADDON_ROOT): their containers run inside the twin and nothing execs from the data dir.
 */
function unpackOnHost(settings: Settings): Settings {
  if (!process.env.K3S_TWIN_ADDON_ROOT) unpackBinaries(str(settings, 'data-dir', '/var/lib/rancher/k3s'));
  return settings;
}

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
      return runServer(unpackOnHost(loadSettings(flags)), {
        onStarted: (ctx) => void (addons = startAddons(ctx)),
        handleApi: async (req, res) => Boolean(addons && (await addons.handle(req, res))),
      });
    }
    case 'agent': {
      const { flags } = parseFlags(rest);
      return runAgent(unpackOnHost(loadSettings(flags)));
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
