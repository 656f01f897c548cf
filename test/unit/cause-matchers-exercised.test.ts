// Every pattern the engine applies to upstream output (k3s's journal and CLI output, kube-vip's and
// Cilium's logs, Flux's status) must match at least one line that upstream really prints: a line recorded
// under its source in test/fixtures/upstream-lines/*.txt, or a message the twin exports. A pattern no such
// line matches names a failure that production never shows (the twin's own invention, or an older or
// newer release's wording), and the gate it feeds would stay silent on real hosts. Flux's lines are Ready
// conditions as the API returns them (one JSON object a line): a pattern may match the line, its reason or
// its message.
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { RULES, START_LINE } from '../../src/k3s/journal-causes.ts';
import { DIFFERENT_TOKEN } from '../../phases/k3s/restore-founder.ts';
import { SNAPSHOT_SAVED } from '../../phases/backup.ts';
import { VERSION_LINE } from '../../src/backup/version.ts';
import { NOT_FOUND } from '../../src/k3s/remote.ts';
import { kubeVipPatterns } from '../../phases/kube-vip/log-causes.ts';
import { fallbackPattern, UNREACHABLE } from '../../phases/cilium/agent-log.ts';
import { HEALTH_RUNNING, NO_MATCHES, PATH_NOT_FOUND, STRICT_VARIABLE } from '../../phases/flux/root-cause.ts';
import { passwordRejected } from '../../lab/twin/server/node-password.ts';
import { RESET_DONE } from '../../lab/twin/server/reset.ts';
import { NOT_READY_MESSAGE } from '../../lab/twin/server/node.ts';

const DIR = join(import.meta.dirname, '../fixtures/upstream-lines');

/** `# owner/repo <tag or commit> <path> [more paths or words]` */
const SOURCE_HEADER = /^# [\w.-]+\/[\w.-]+ \S+ \S+/;

interface CorpusLine {
  where: string;
  source: string;
  text: string;
}

/** The recorded lines of one file, each with its source header; lines without one are problems. */
function parseUpstreamLines(name: string, content: string): { lines: CorpusLine[]; problems: string[] } {
  const lines: CorpusLine[] = [];
  const problems: string[] = [];
  let source: string | undefined;
  content.split('\n').forEach((raw, i) => {
    const where = `${name}:${i + 1}`;
    if (raw.trim() === '') return;
    if (raw.startsWith('#')) {
      if (SOURCE_HEADER.test(raw)) source = raw.slice(2).trim();
      else problems.push(`${where}: a source line must read "# <owner>/<repo> <tag or commit> <path>", not ${JSON.stringify(raw)}`);
      return;
    }
    if (!source) problems.push(`${where}: upstream line without a source header above it: ${JSON.stringify(raw)}`);
    else lines.push({ where, source, text: raw });
  });
  return { lines, problems };
}

function readCorpus(): { lines: CorpusLine[]; problems: string[] } {
  const files = readdirSync(DIR)
    .filter((f) => f.endsWith('.txt'))
    .sort();
  const all = files.map((f) => parseUpstreamLines(f, readFileSync(join(DIR, f), 'utf8')));
  return { lines: all.flatMap((a) => a.lines), problems: all.flatMap((a) => a.problems) };
}

/** The twin's exported messages (it imitates upstream's words; lab/TWIN.md cites the source of each). */
const TWIN_LINES: CorpusLine[] = Object.entries({ PASSWORD_REJECTED: passwordRejected(), RESET_DONE, NOT_READY_MESSAGE }).map(([name, text]) => ({
  where: `twin ${name}`,
  source: 'the twin',
  text,
}));

/**
 * What a matcher sees of a line: the line, and for a Kubernetes condition recorded as JSON (Flux status:
 * `{"type":"Ready","status":"False","reason":…,"message":…}`) its reason and message, which the engine reads.
 */
function views(line: string): string[] {
  if (!line.startsWith('{')) return [line];
  try {
    const o = JSON.parse(line) as Record<string, unknown>;
    return [line, ...['reason', 'message'].map((k) => o[k]).filter((v): v is string => typeof v === 'string')];
  } catch {
    return [line];
  }
}

/** The top-level alternatives of a pattern (`a|b(c|d)` → `a`, `b(c|d)`), each counted on its own. */
function alternatives(re: RegExp): RegExp[] {
  const src = re.source;
  const parts: string[] = [];
  let depth = 0;
  let inClass = false;
  let start = 0;
  for (let i = 0; i < src.length; i++) {
    const c = src[i];
    if (c === '\\') i++;
    else if (inClass) inClass = c !== ']';
    else if (c === '[') inClass = true;
    else if (c === '(') depth++;
    else if (c === ')') depth--;
    else if (c === '|' && depth === 0) {
      parts.push(src.slice(start, i));
      start = i + 1;
    }
  }
  parts.push(src.slice(start));
  const flags = re.flags.replace(/[gy]/g, '');
  return parts.map((p) => new RegExp(p, flags));
}

interface Matcher {
  where: string;
  re: RegExp;
}

/**
 * The recorded lines come from clusters on k3s's default service network 10.43.0.0/16, whose `kubernetes`
 * ClusterIP is 10.43.0.1; the matchers take the address a cluster's inventory derives.
 */
const DEFAULT_KUBERNETES_IP = '10.43.0.1';

const MATCHERS: Matcher[] = [
  ...RULES.map((r) => ({ where: `src/k3s/journal-causes.ts ${r.id}`, re: r.re })),
  { where: 'src/k3s/journal-causes.ts START_LINE', re: START_LINE },
  { where: 'phases/k3s/restore-founder.ts DIFFERENT_TOKEN', re: DIFFERENT_TOKEN },
  { where: 'phases/backup.ts SNAPSHOT_SAVED', re: SNAPSHOT_SAVED },
  { where: 'src/backup/version.ts VERSION_LINE', re: VERSION_LINE },
  { where: 'src/k3s/remote.ts NOT_FOUND (kubectl stderr)', re: NOT_FOUND },
  ...kubeVipPatterns(DEFAULT_KUBERNETES_IP).map(([re, id]) => ({ where: `phases/kube-vip/log-causes.ts ${id}`, re })),
  { where: 'phases/cilium/agent-log.ts fallbackPattern', re: fallbackPattern(DEFAULT_KUBERNETES_IP) },
  { where: 'phases/cilium/agent-log.ts UNREACHABLE', re: UNREACHABLE },
  { where: 'phases/flux/root-cause.ts PATH_NOT_FOUND', re: PATH_NOT_FOUND },
  { where: 'phases/flux/root-cause.ts STRICT_VARIABLE', re: STRICT_VARIABLE },
  { where: 'phases/flux/root-cause.ts NO_MATCHES', re: NO_MATCHES },
  { where: 'phases/flux/root-cause.ts HEALTH_RUNNING (Reconciling)', re: HEALTH_RUNNING },
];

/**
 * Alternatives that no upstream line of the pinned releases prints, each with the finding. An entry must
 * stay true: the test fails once a recorded line matches it (then delete the entry) or once the pattern is
 * gone from the matchers (delete it too). Nothing else may be unexercised.
 */
const NOT_UPSTREAM: Record<string, string> = {};

const key = (re: RegExp) => re.source;

describe('cause matchers are exercised by upstream lines', () => {
  const corpus = readCorpus();
  const lines = [...corpus.lines, ...TWIN_LINES];

  it('every recorded line sits under a source header naming repository, tag or commit, and path', () => {
    expect(corpus.problems).toEqual([]);
    expect(corpus.lines.length).toBeGreaterThan(0);
  });

  it('a line without a source header is refused', () => {
    expect(parseUpstreamLines('x.txt', 'level=info msg="orphan"\n').problems).toEqual([
      'x.txt:1: upstream line without a source header above it: "level=info msg=\\"orphan\\""',
    ]);
    expect(parseUpstreamLines('x.txt', '# just a note\nline\n').problems).toHaveLength(2);
    expect(parseUpstreamLines('x.txt', '# k3s-io/k3s v1.33.5+k3s1 pkg/etcd/etcd.go\nline\n').problems).toEqual([]);
  });

  it('alternatives split at the top level only', () => {
    expect(alternatives(/a|b(c|d)|[|]x/i).map(String)).toEqual(['/a/i', '/b(c|d)/i', '/[|]x/i']);
  });

  const cases = MATCHERS.flatMap((m) => alternatives(m.re).map((re) => ({ where: m.where, re })));

  it.each(cases.map((c) => [`${c.where}: /${c.re.source}/${NOT_UPSTREAM[key(c.re)] ? ' (listed as not upstream)' : ''}`, c] as const))('%s', (_, { re }) => {
    const hits = lines.filter((l) => views(l.text).some((v) => re.test(v)));
    const excuse = NOT_UPSTREAM[key(re)];
    if (excuse) {
      expect(
        hits.map((h) => h.where),
        `listed as not upstream (${excuse}), yet matched: delete the entry`,
      ).toEqual([]);
      return;
    }
    expect(
      hits.map((h) => h.where),
      `no recorded upstream line (test/fixtures/upstream-lines/*.txt) and no twin message matches /${re.source}/`,
    ).not.toEqual([]);
  });

  it('every entry of NOT_UPSTREAM is still a matcher', () => {
    const sources = new Set(cases.map((c) => key(c.re)));
    expect(Object.keys(NOT_UPSTREAM).filter((k) => !sources.has(k))).toEqual([]);
  });
});
