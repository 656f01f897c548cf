// Every pattern the engine applies to upstream output (k3s's journal and CLI output, kube-vip's and
// Cilium's logs, Flux's status, kubectl's, sudo's and ssh2's errors) must match at least one line that
// upstream really prints: a line recorded
// under its source in test/fixtures/upstream-lines/*.txt, or a message the twin exports. A pattern no such
// line matches names a failure that production never shows (the twin's own invention, or an older or
// newer release's wording), and the gate it feeds would stay silent on real hosts. Flux's lines are Ready
// conditions as the API returns them (one JSON object a line): a pattern may match the line, its reason or
// its message.
//
// The patterns are gathered, not listed: every module of phases/ and src/ exports its own as
// UPSTREAM_PATTERNS (src/causes/upstream-patterns.ts), and a regular expression written in phases/ or src/
// in upstream's words (see inUpstreamWords) that no such export holds fails the test.
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join, relative } from 'node:path';
import ts from 'typescript';
import { describe, expect, it } from 'vitest';
import type { PatternSite, UpstreamPatterns } from '../../src/causes/upstream-patterns.ts';
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
const SITE: PatternSite = { kubernetesIp: '10.43.0.1' };

const ROOT = join(import.meta.dirname, '../..');

function tsFiles(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const p = join(dir, name);
    if (statSync(p).isDirectory()) return tsFiles(p);
    return name.endsWith('.ts') ? [p] : [];
  });
}

const ENGINE_FILES = ['phases', 'src'].flatMap((d) => tsFiles(join(ROOT, d))).map((f) => relative(ROOT, f));

/** Every module of phases/ and src/ that exports UPSTREAM_PATTERNS (src/causes/upstream-patterns.ts), with its patterns. */
async function gatherMatchers(): Promise<Matcher[]> {
  const out: Matcher[] = [];
  for (const file of ENGINE_FILES) {
    if (!/^export const UPSTREAM_PATTERNS\b/m.test(readFileSync(join(ROOT, file), 'utf8'))) continue;
    const mod = (await import(join(ROOT, file))) as { UPSTREAM_PATTERNS: UpstreamPatterns };
    for (const [name, value] of Object.entries(mod.UPSTREAM_PATTERNS)) {
      const v = typeof value === 'function' ? value(SITE) : value;
      const list: readonly RegExp[] = v instanceof RegExp ? [v] : v;
      for (const re of list) out.push({ where: `${file} ${name}`, re });
    }
  }
  return out;
}

/**
 * Whether a pattern is written in upstream's words rather than a parser's: its literal text (escapes of
 * punctuation resolved, character classes and other escapes dropped) holds two words joined by a space or
 * `: ` (`failed to verify`, `x509: certificate`), or one word of eight letters or more (`passphrase`).
 */
export function inUpstreamWords(source: string): boolean {
  const literal = source
    .replace(/\[[^\]]*\]/g, ' ')
    .replace(/\\([^A-Za-z0-9])/g, '$1')
    .replace(/\\[A-Za-z0-9]/g, ' ');
  return /[A-Za-z][A-Za-z0-9]+(?: |: )[A-Za-z]{2,}/.test(literal) || /[A-Za-z]{8,}/.test(literal);
}

/** A regular expression written in phases/ or src/: its file and line, and its source (the template's literal parts for `new RegExp(`…`)`). */
interface PatternSiteInSource {
  where: string;
  file: string;
  /** The source of a literal; for `new RegExp(template)`, its literal parts in order. */
  parts: string[];
}

function patternsInSource(): PatternSiteInSource[] {
  const out: PatternSiteInSource[] = [];
  for (const file of ENGINE_FILES) {
    const sf = ts.createSourceFile(file, readFileSync(join(ROOT, file), 'utf8'), ts.ScriptTarget.Latest, true);
    const at = (n: ts.Node) => `${file}:${sf.getLineAndCharacterOfPosition(n.getStart()).line + 1}`;
    const visit = (n: ts.Node) => {
      if (ts.isRegularExpressionLiteral(n)) out.push({ where: at(n), file, parts: [n.text.slice(1, n.text.lastIndexOf('/'))] });
      if (ts.isNewExpression(n) && n.expression.getText() === 'RegExp' && n.arguments?.[0]) {
        const a = n.arguments[0];
        // Built from another pattern (`new RegExp(re.source, 'g')`) or from data: nothing of its own to hold.
        if (ts.isStringLiteral(a) || ts.isNoSubstitutionTemplateLiteral(a)) out.push({ where: at(n), file, parts: [a.text] });
        if (ts.isTemplateExpression(a)) out.push({ where: at(n), file, parts: [a.head.text, ...a.templateSpans.map((s) => s.literal.text)] });
      }
      ts.forEachChild(n, visit);
    };
    visit(sf);
  }
  return out;
}

/** Whether a gathered pattern is the one written at a site: the same source, or a template's parts in order. */
function registers(re: RegExp, site: PatternSiteInSource): boolean {
  // RegExp's source escapes `/` (`i\/o`) where a string given to `new RegExp` need not.
  const norm = (x: string) => x.replace(/\\\//g, '/');
  const source = norm(re.source);
  if (site.parts.length === 1) return source === norm(site.parts[0]);
  let from = 0;
  for (const part of site.parts.map(norm)) {
    const i = source.indexOf(part, from);
    if (i < 0) return false;
    from = i + part.length;
  }
  return true;
}

/**
 * Patterns in upstream's words that are not applied to upstream's output, each with the reason. Keep it
 * short: a pattern that names a cause from what a program printed belongs in its module's UPSTREAM_PATTERNS.
 */
const NOT_MATCHING_UPSTREAM: Record<string, string> = {
  'phases/k3s/restore-passwords.ts /^Secret\\/kube-system\\/[^/]+\\.node-password\\.k3s$/':
    "picks the node-password Secrets out of kubectl's object names; the words are k3s's Secret name, not a message",
};
const excused = (p: PatternSiteInSource) => NOT_MATCHING_UPSTREAM[`${p.file} /${p.parts.join('${…}')}/`];

/**
 * Alternatives that no upstream line of the pinned releases prints, each with the finding. An entry must
 * stay true: the test fails once a recorded line matches it (then delete the entry) or once the pattern is
 * gone from the matchers (delete it too). Nothing else may be unexercised.
 */
const NOT_UPSTREAM: Record<string, string> = {};

const key = (re: RegExp) => re.source;

const MATCHERS = await gatherMatchers();

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
  it("the gathering finds the modules (journal, kube-vip, Cilium, Flux, sudo) and the VIP gate's certificate words", () => {
    const where = MATCHERS.map((m) => m.where);
    for (const w of [
      'src/k3s/journal-causes.ts RULES',
      'phases/kube-vip/log-causes.ts kubeVipPatterns',
      'phases/cilium/agent-log.ts fallbackPattern',
      'phases/flux/root-cause.ts PATH_NOT_FOUND',
      'src/transport/sudo.ts NEEDS_PASSWORD',
      'phases/kube-vip/vip-gate.ts CERTIFICATE_ERROR',
    ])
      expect(where).toContain(w);
  });

  it("upstream words are told from a parser's", () => {
    expect(inUpstreamWords(String.raw`x509: |tls: failed to verify certificate`)).toBe(true);
    expect(inUpstreamWords('passphrase')).toBe(true);
    expect(inUpstreamWords(String.raw`^k3s version (v\S+) \(`)).toBe(true);
    expect(inUpstreamWords(String.raw`^\d+:\s+(\S+)\s+inet\s+([\d.]+)\/\d+`)).toBe(false);
    expect(inUpstreamWords(String.raw`^[^/]+\/Chart\.yaml$`)).toBe(false);
    expect(inUpstreamWords(String.raw`^v?\d+\.\d+\.\d+(?:[-+][\w.-]+)?$`)).toBe(false);
  });

  it("every pattern in upstream's words in phases/ and src/ is in its module's UPSTREAM_PATTERNS", () => {
    const unregistered = patternsInSource()
      .filter((p) => inUpstreamWords(p.parts.join(' ')) && !excused(p))
      .filter((p) => !MATCHERS.some((m) => m.where.startsWith(p.file + ' ') && registers(m.re, p)))
      .map((p) => `${p.where}: /${p.parts.join('${…}')}/`);
    expect(unregistered, "export each from its module's UPSTREAM_PATTERNS (src/causes/upstream-patterns.ts)").toEqual([]);
  });

  it('every entry of NOT_MATCHING_UPSTREAM is still a pattern in the source', () => {
    const present = new Set(patternsInSource().map((p) => `${p.file} /${p.parts.join('${…}')}/`));
    expect(Object.keys(NOT_MATCHING_UPSTREAM).filter((k) => !present.has(k))).toEqual([]);
  });
});
