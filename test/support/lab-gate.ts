// Running one of the engine's gates against the lab directly, without a whole bootstrap run: its commands go
// to the lab hosts as root (as the engine's `sudo` over SSH would), with the real clock and the gate's own
// budget. For a lab test that sets a cluster up by hand and asks what the gate names. Its state folder is
// empty (no kubeconfig: a cluster set up by hand has given the engine none), so reads of the API go through
// `k3s kubectl` on the server, as the engine's do for a state folder of another machine.
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Gate, HostRef } from '../../src/engine/phase.ts';
import type { RunContext } from '../../src/engine/context.ts';
import { systemClock } from '../../src/engine/clock.ts';
import { LAB_SERVICE_CIDR } from '../../lab/inventory.ts';
import { LAB_IMAGE_ARCHIVES } from '../../lab/image-archives.ts';
import { serviceAddresses } from '../../src/inventory/service-addresses.ts';
import { hostExec, hosts } from './lab.ts';

export interface GateRun {
  error?: unknown;
  tookMs: number;
}

export async function runGate(gate: Gate, hostName: string, apiEndpoint: { host: string; port: number }): Promise<GateRun> {
  const signal = AbortSignal.timeout(gate.budgetMs);
  const ctx = {
    // The lab's service network, as the inventory `lab up` writes derives it (the ClusterIP gates name),
    // and its image archives (the lab is air-gapped: a pull that cannot succeed is named at once).
    inventory: {
      derived: { apiEndpoint, serviceAddresses: serviceAddresses(LAB_SERVICE_CIDR), paths: { imageArchives: LAB_IMAGE_ARCHIVES.map((file) => ({ file })) } },
    },
    facts: { get: () => undefined },
    stateDir: mkdtempSync(join(tmpdir(), 'lab-gate-state-')),
    clock: systemClock,
    signal,
    remote: (h: HostRef) => ({
      host: h.name,
      exec: async (command: string, opts: { timeoutMs?: number } = {}) => {
        const t0 = Date.now();
        const r = await hostExec(h.name, command, { allowFail: true, timeoutMs: opts.timeoutMs ?? 15_000 });
        return { command, stdout: r.stdout, stderr: r.stderr, code: r.code, durationMs: Date.now() - t0 };
      },
      close: async () => undefined,
    }),
  } as unknown as RunContext;
  const h = hosts().find((x) => x.name === hostName)!;
  const ref: HostRef = { name: h.name, address: h.address, role: h.role as HostRef['role'], founder: h.name === hosts()[0]!.name };
  const t0 = Date.now();
  try {
    await gate.run(ref, ctx, signal);
    return { tookMs: Date.now() - t0 };
  } catch (error) {
    return { error, tookMs: Date.now() - t0 };
  }
}
