// `bootstrap artifacts <env> [--check]`: downloads what the inventory names and is missing (the k3s
// binary and images of k3s.version, the Cilium chart, the Flux install, image archives with a url),
// each verified against its release's sha256 (src/artifacts/). No host is contacted. `--check` says what
// would be downloaded (exit 2 when anything would be) and downloads nothing.
import { EXIT_WOULD_CHANGE } from '../src/errors.ts';
import { fetchArtifacts } from '../src/artifacts/fetch.ts';
import { nodeHttp, type Http } from '../src/artifacts/http.ts';
import { artifactsOf, sourcesFrom } from '../src/artifacts/sources.ts';
import { artifactRenderer } from '../src/view/artifacts.ts';
import type { Command } from './args.ts';
import type { Io } from './io.ts';
import { loadFor } from './run-command.ts';

export type ArtifactsArgs = Omit<Extract<Command, { kind: 'artifacts' }>, 'kind' | 'inventory'> & { file: string };

export async function artifactsCommand(args: ArtifactsArgs, io: Io, http: Http = nodeHttp()): Promise<number> {
  const loaded = await loadFor(args.file, args.env);
  const ci = io.env.CI === 'true' || io.env.CI === '1';
  const emit = artifactRenderer({ out: io.out, json: args.json, ...(io.status && io.isTTY && !ci && { status: io.status }) });
  const list = artifactsOf(loaded, sourcesFrom(io.env));
  const s = await fetchArtifacts(list, { http, emit }, { check: args.check });
  if (!args.json) {
    const parts = [`${s.present} in place`, args.check ? `${s.missing} to download` : `${s.placed} downloaded`];
    io.out(`artifacts for ${loaded.inventory.environment}: ${parts.join(', ')}`);
  }
  return args.check && s.missing > 0 ? EXIT_WOULD_CHANGE : 0;
}
