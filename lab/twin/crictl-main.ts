// Entry point of the twin's crictl on its own (bundled apart by ./build.ts and unpacked by the k3s twin into
// its data dir, ./runtime/data-dir.ts): `k3s crictl …` execs it from there as real k3s execs the crictl it
// unpacked (k3s-io/k3s cmd/k3s/main.go externalCLI → stageAndRun), so a call starts Node with this small
// script instead of the whole twin.
import { runCrictl } from './crictl.ts';

runCrictl(process.argv.slice(2), { out: (t) => process.stdout.write(t), err: (t) => process.stderr.write(t), now: () => new Date() }).then(
  (code) => (process.exitCode = code),
  (err) => {
    process.stderr.write(`${String(err?.stack ?? err)}\n`);
    process.exitCode = 1;
  },
);
