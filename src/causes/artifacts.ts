import { defineCauses } from './define.ts';

// Causes of `bootstrap artifacts <env>`: downloading what the inventory names from its upstream release.
// Each stop says what to download, from where, and where to put it (the evidence's command), so an
// operator without network access on this machine can fetch the file elsewhere and carry it over.
export const artifactCauses = defineCauses({
  ARTIFACT_NOT_FOUND: {
    title: 'The artifact is not at its download URL (HTTP 404)',
    meaning:
      'The server answered, but has no file at that URL: the version in the inventory is not released there (a typo, a release withdrawn), or a mirror does not hold it.',
    remedy:
      'Check the version in the inventory against the release page; with a mirror (BOOTSTRAP_K3S_RELEASES, BOOTSTRAP_CILIUM_CHARTS, BOOTSTRAP_FLUX_RELEASES), check that it holds the file. Or download the file named elsewhere, put it where the evidence says, and run `bootstrap artifacts <env>` again (it verifies it).',
  },
  ARTIFACT_UNREACHABLE: {
    title: 'The artifact could not be downloaded: no answer, a failed connection, a stall or an HTTP error',
    meaning:
      'The download did not get through: no network or DNS on this machine (an air-gapped operator machine), a proxy or firewall in the way, the server failing (HTTP 5xx), too many redirects, or no data for the idle budget. Nothing was placed; a partial download is kept as `<file>.part` and resumed.',
    remedy:
      'Run `bootstrap artifacts <env>` again where the URL answers (it resumes), or download the file on a machine that reaches it, with the command in the evidence, and put it where the evidence says.',
  },
  ARTIFACT_TRUNCATED: {
    title: 'The download ended before the server sent the whole file',
    meaning: 'The connection closed before the byte count the server announced (Content-Length). The bytes received are kept as `<file>.part`.',
    remedy: 'Run `bootstrap artifacts <env>` again: it resumes from the bytes kept (an HTTP Range request) and verifies the whole file.',
  },
  ARTIFACT_CHECKSUM_MISMATCH: {
    title: "The artifact's sha256 is not the one its release publishes (or the inventory pins)",
    meaning:
      'The bytes are not the release: a corrupted or tampered download, a mirror serving another file, or a file already in place that is another version. A downloaded file is discarded and not placed; a file found in place is left alone.',
    remedy:
      'Download again (`bootstrap artifacts <env>`); when it repeats, check the mirror or the network path. A file found in place: remove it (and its `.sha256`) so the release is downloaded, or correct the pin in the inventory.',
  },
  ARTIFACT_NO_SOURCE: {
    title: 'bootstrap does not know where to download this artifact, or how to verify it',
    meaning:
      'The inventory names a file bootstrap cannot fetch: an image archive without a `url` (archives are built by the operator), a Flux install without `flux.version`, a Cilium chart whose file name does not carry its version, or a release whose checksum list does not name the file.',
    remedy:
      'Do what the evidence says: build the image archive (skopeo), add `url`, `flux.version` or the chart version to the inventory, or put the file in place yourself.',
  },
});
