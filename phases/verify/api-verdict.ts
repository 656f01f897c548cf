// Pure: /readyz answers seen from each server through each address → one row per vantage, and one
// API_UNREACHABLE_VIA per address that failed, naming the address and every vantage it failed from.
import { CauseError } from '../../src/errors.ts';
import type { ProbeResults } from '../../src/engine/phase.ts';
import type { Row, Verdict } from './read.ts';
import { readyzVia } from '../../src/k3s/remote.ts';

export interface Target {
  key: string;
  label: string;
  address: string;
  /** The server owning the address; undefined for the VIP. */
  owner?: string;
}

const answered = (r: ProbeResults[string]) => r.code === 0 && r.stdout.trim() === 'ok';
const lastLine = (r: ProbeResults[string]) => (r.stderr || r.stdout).trim().split('\n').at(-1) || (r.code === null ? 'no answer' : `exit ${r.code}`);

/**
 * `asked`: how each address was asked, for the evidence (by default `k3s kubectl … get --raw /readyz` on
 * each server).
 */
export function apiVerdict(
  targets: Target[],
  port: number,
  seen: { vantage: string; results: ProbeResults }[],
  asked: (t: Target) => string = (t) => readyzVia(t.address, port),
): Verdict {
  const rows: Row[] = seen.map(({ vantage, results }) => {
    const bad = targets.filter((t) => !answered(results[t.key]));
    return {
      host: vantage,
      ok: bad.length === 0,
      detail: bad.length
        ? `not ready via ${bad.map((t) => `${t.label}: ${lastLine(results[t.key])}`).join('; ')}`
        : `ready via ${targets.map((t) => t.label).join(', ')}`,
    };
  });
  const stops = targets.flatMap((t) => {
    const from = seen.filter(({ results }) => !answered(results[t.key]));
    if (!from.length) return [];
    return [
      new CauseError('API_UNREACHABLE_VIA', {
        host: t.owner ?? from[0].vantage,
        message: `The API is not ready via ${t.address}:${port} (${t.owner ? `${t.owner}'s own address` : 'the VIP'}) from ${from.map((f) => f.vantage).join(', ')}`,
        evidence: {
          command: asked(t),
          exitCode: from[0].results[t.key].code,
          seen: from.map((f) => `https://${t.address}:${port}/readyz from ${f.vantage}: ${lastLine(f.results[t.key])}`).join('; '),
        },
      }),
    ];
  });
  return { rows, stops };
}

/** The operator's vantage: a TLS handshake from the engine to each address, through the SSH connection to `via`. */
const OPERATOR_VANTAGE = 'operator';

export function operatorVerdict(targets: Target[], port: number, via: string, seen: Record<string, { ok: boolean; seen?: string }>): Verdict {
  const bad = targets.filter((t) => !seen[t.key]?.ok);
  const rows: Row[] = [
    {
      host: OPERATOR_VANTAGE,
      ok: bad.length === 0,
      detail: bad.length
        ? `no verified TLS handshake via ${bad.map((t) => `${t.label}: ${seen[t.key]?.seen ?? 'not tried'}`).join('; ')}`
        : `TLS verified against the cluster CA via ${targets.map((t) => t.label).join(', ')} (through ${via})`,
    },
  ];
  const stops = bad.map(
    (t) =>
      new CauseError('API_UNREACHABLE_VIA', {
        host: t.owner ?? via,
        message: `The API does not answer with the cluster certificate via ${t.address}:${port} (${t.owner ? `${t.owner}'s own address` : 'the VIP'}) from the operator's side`,
        evidence: {
          command: `TLS handshake from the engine to ${t.address}:${port} through the SSH connection to ${via}, verifying the cluster CA`,
          seen: seen[t.key]?.seen ?? 'not tried',
        },
      }),
  );
  return { rows, stops };
}
