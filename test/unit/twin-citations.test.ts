// lab/TWIN.md cites, for every imitated behaviour, the upstream file it imitates (issue 12, item 10): the
// tables headed `| behaviour | upstream source |` (the Flux twins': `| behaviour | upstream |`), one under
// each "Imitated behaviours and their upstream source" heading, hold one behaviour a row and its source in
// the last column. This test reads those tables and fails on a row whose source does not cite upstream precisely.
//
// The accepted shape of a citation: `owner/repo REF \`path\`` (or `owner/repo@REF`), where
// - owner/repo is a GitHub repository name outside backquotes (`k3s-io/k3s`, `kubernetes/kubernetes`);
// - REF is a tag (`v1.33.5+k3s1`, `v0.9.2`, a module tag `kustomize/v1.35.0`, Go's `go1.24`) or a commit of
//   7 to 40 hex digits (`005499a9`, also written `@2a722cf3` or `commit 0136cf2`);
// - the path is in backquotes, relative, and holds a slash or ends in a file extension of 1 to 4 lower-case
//   letters or digits (`pkg/etcd/etcd.go`, `install.sh`, `pkg/cli/cmds/`; not `/db/info` nor
//   `metav1.Status`), and follows the REF directly or after other paths of the same repository.
// Where a tag or commit could not be confirmed, the row says so in its place: `owner/repo (tag unverified)
// \`path\``. A row passes when it has at least one such citation and no path in it is attributed otherwise:
// a path right after a bare project name (`k3s \`pkg/…\``, `kubelet \`…\``) or after an owner/repo with
// neither a REF nor `(tag unverified)` is a citation with a part missing. Paths under `lab/` are the
// project's own.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';

const TWIN_MD = join(import.meta.dirname, '../../lab/TWIN.md');

const REPO = String.raw`[A-Za-z0-9][\w.-]*\/[A-Za-z0-9][\w.-]*`;
const REF = String.raw`(?:(?:[a-z][\w-]*\/)*v\d+(?:\.\d+)*[\w.+-]*|go\d+\.\d+(?:\.\d+)?|(?:commit |@)?[0-9a-f]{7,40})`;
const PATH = String.raw`\x60(?:[^\x60\s\/][^\x60\s]*\/[^\x60\s]*|[^\x60\s\/]+\.[a-z0-9]{1,4})\x60`;

/** Written where a tag or commit could not be confirmed: the gap is declared, not hidden. */
const UNVERIFIED = '(tag unverified)';

const CITATION = new RegExp(String.raw`(?<![\w.\/\x60-])${REPO}(?:@|\s+)(?:${REF}|\(tag unverified\))\s+${PATH}`);
const IS_REF = new RegExp(String.raw`^\(?${REF}[,)]?$`);
const IS_REPO = new RegExp(String.raw`^${REPO}$`);
const IS_PATH = new RegExp(String.raw`^${PATH}$`);

/** Words that may stand before a path of the repository cited before them. */
const CONNECTORS = new Set(['and', 'or', 'in', 'at', 'of', 'also', 'then', 'see', 'with', 'by', 'the', 'its', 'from', 'both', 'plus', 'no']);

interface Row {
  line: number;
  behaviour: string;
  source: string;
}

const SOURCE_HEADER = /^\|\s*behaviour\s*\|\s*upstream(?: source)?\s*\|\s*$/;

/** The rows of every `| behaviour | upstream source |` (or `| behaviour | upstream |`) table. */
export function sourceRows(markdown: string): Row[] {
  const rows: Row[] = [];
  let inTable = false;
  markdown.split('\n').forEach((text, i) => {
    if (SOURCE_HEADER.test(text)) {
      inTable = true;
      return;
    }
    if (!text.startsWith('|')) {
      inTable = false;
      return;
    }
    if (!inTable || /^\|[-\s|]+\|$/.test(text)) return;
    // Cells split at `|` outside backquotes and not escaped (`\|`).
    const cells: string[] = [];
    let cell = '';
    let code = false;
    for (let j = 1; j < text.length; j++) {
      const c = text[j];
      if (c === '`') code = !code;
      if (c === '|' && !code && text[j - 1] !== '\\') {
        cells.push(cell.trim());
        cell = '';
      } else cell += c;
    }
    rows.push({ line: i + 1, behaviour: cells[0] ?? '', source: cells.at(-1) ?? '' });
  });
  return rows;
}

/** What a source cell lacks; empty when it cites upstream precisely. */
export function citationProblems(source: string): string[] {
  const problems: string[] = [];
  if (!CITATION.test(source)) problems.push('no citation of owner/repo, tag or commit, and path');
  // `(tag unverified)` is one token here, as a REF is.
  source = source.replaceAll(UNVERIFIED, 'tag-unverified');
  // Tokens outside backquotes are words; a backquoted span is one token.
  const tokens = source.match(/\x60[^\x60]*\x60|[^\s\x60]+/g) ?? [];
  tokens.forEach((t, i) => {
    if (!IS_PATH.test(t) || i === 0) return;
    const before = tokens[i - 1].replace(/^[(;,]+|[;,]+$/g, '');
    if (t.startsWith('`lab/')) return; // the project's own file
    if (before === '' || /[;,(/]$/.test(tokens[i - 1]) || IS_REF.test(tokens[i - 1]) || tokens[i - 1] === 'tag-unverified' || IS_PATH.test(tokens[i - 1]))
      return;
    if (/\)$/.test(tokens[i - 1])) return; // `path` (`fn`), `path2`: a path after another path's note
    if (IS_REPO.test(before)) problems.push(`${t} after ${before} without a tag or commit`);
    else if (!CONNECTORS.has(before.toLowerCase())) problems.push(`${t} after "${before}", not after owner/repo and a tag or commit`);
  });
  return problems;
}

describe('lab/TWIN.md cites every imitated behaviour by repository, tag or commit, and path', () => {
  const markdown = readFileSync(TWIN_MD, 'utf8');
  const rows = sourceRows(markdown);

  it('reads a source table under each "Imitated behaviours" heading', () => {
    const lines = markdown.split('\n');
    const headings = lines.filter((l) => /^## Imitated behaviours and their upstream source/.test(l)).length;
    expect(headings).toBeGreaterThanOrEqual(3);
    expect(lines.filter((l) => SOURCE_HEADER.test(l)).length).toBe(headings);
    expect(rows.length).toBeGreaterThan(100);
  });

  it('accepts the documented shapes and refuses rows missing a part', () => {
    expect(citationProblems('k3s-io/k3s v1.33.5+k3s1 `pkg/etcd/etcd.go` (`Start`), `pkg/etcd/snapshot.go`')).toEqual([]);
    expect(citationProblems('fluxcd/pkg kustomize/v1.35.0 `kustomize/kustomize_varsub.go`')).toEqual([]);
    expect(citationProblems('kubernetes/kubernetes @152b09ac `pkg/registry/apps/daemonset/strategy.go`')).toEqual([]);
    expect(citationProblems('k3s-io/k3s commit 0136cf2 `install.sh` (`create_killall`)')).toEqual([]);
    expect(citationProblems('golang/go go1.24 `src/net/net.go`')).toEqual([]);
    expect(citationProblems('k3s `pkg/server/handlers/router.go`')).toEqual([
      'no citation of owner/repo, tag or commit, and path',
      expect.stringContaining('after "k3s"'),
    ]);
    expect(citationProblems('k3s-io/k3s `pkg/agent/loadbalancer/loadbalancer.go`')).toEqual([
      'no citation of owner/repo, tag or commit, and path',
      expect.stringContaining('after k3s-io/k3s without a tag or commit'),
    ]);
    expect(citationProblems('k3s-io/k3s v1.33.5+k3s1 `pkg/etcd/etcd.go`; kubelet `pkg/kubelet/kubelet.go`')).toEqual([
      expect.stringContaining('after "kubelet"'),
    ]);
    expect(citationProblems('(see the add-on twins above)')).toEqual(['no citation of owner/repo, tag or commit, and path']);
    expect(citationProblems('kubernetes/kubernetes (tag unverified) `pkg/kubelet/server/server.go` (`InstallAuthFilter`)')).toEqual([]);
    expect(citationProblems('fluxcd/pkg apis/meta/v1.30.0 `apis/meta/`')).toEqual([]);
  });

  it('every row cites owner/repo, a tag or commit, and a path', () => {
    const bad = rows.flatMap((r) => citationProblems(r.source).map((p) => `lab/TWIN.md:${r.line} (${r.behaviour.slice(0, 50)}…): ${p}`));
    expect(bad).toEqual([]);
  });
});
