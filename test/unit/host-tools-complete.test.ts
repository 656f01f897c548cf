// HOST_TOOLS (phases/node-baseline/tools.ts) is the list node-baseline checks before any change; a program
// the engine runs on a host that is not on it fails mid-run on a bare host instead of as TOOL_MISSING up
// front. This test reads the engine's source (phases/ and src/) for the commands it sends to a host and
// fails when one runs a program that is neither in HOST_TOOLS, nor a shell builtin or keyword, nor k3s.
//
// Where a command is: the value of a `command:` property, the first argument of an `exec(…)` call, the
// initializer of a variable (or the body of a function) whose name ends in `command`/`script`/`probe`
// (any case), and what those name: a string or template literal; the branches of `?:`, `??`, `||`; the
// parts of `+`; the elements of an array (`[…].join(' && ')`); a variable or a function's return value
// defined in phases/ or src/ (looked up by name). A template's `${…}` is looked into the same way; one
// that stays unknown (a parameter, a call of a library) reads as a word that is never a program.
// Here-documents are taken out (their command substitutions are scripts like any other).
// The shell text is then split into simple commands at `;`, `&&`, `||`, `|`, `&`, newlines, `$(`, `(`,
// `)`, `{`, `}` and backquotes, and after `if`, `then`, `else`, `elif`, `while`, `until`, `do`, `!`; the
// program is the first word after assignments and after the prefixes `sudo`, `exec`, `nohup`,
// `timeout <n>` and `xargs <options>` (which are programs themselves).
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, relative } from 'node:path';
import ts from 'typescript';
import { describe, expect, it } from 'vitest';
import { HOST_TOOLS } from '../../phases/node-baseline/tools.ts';

const ROOT = join(import.meta.dirname, '../..');

/** dash's builtins and reserved words (dash(1)), which need no package. */
const SHELL_BUILTINS = new Set(
  (
    ': . [ alias bg break cd command continue echo eval exec exit export false fc fg getopts hash jobs kill local printf pwd read readonly return set shift test times trap true type ulimit umask unalias unset wait ' +
    'case do done elif else esac fi for if in then until while'
  ).split(' '),
);

/** The uploaded binary: `k3s`, `k3s kubectl`, `k3s etcd-snapshot`, `k3s crictl`, wherever it is installed. */
const UPLOADED = new Set(['k3s']);

/** A placeholder for what cannot be known statically (never taken for a program). */
const UNKNOWN = '\u0000';

function tsFiles(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const p = join(dir, name);
    if (statSync(p).isDirectory()) return tsFiles(p);
    return name.endsWith('.ts') && !name.endsWith('.d.ts') ? [p] : [];
  });
}

interface Source {
  file: string;
  sf: ts.SourceFile;
}

/** Resolves names lexically (a block's or a file's declarations, then a named import of phases/ or src/). */
class Scopes {
  private readonly byPath = new Map<string, ts.SourceFile>();
  constructor(sources: Source[]) {
    for (const s of sources) this.byPath.set(join(ROOT, s.file), s.sf);
  }

  /** What a name stands for at `at`: a variable's initializer or a function's returned expressions; undefined when unknown. */
  lookup(name: string, at: ts.Node): ts.Expression[] | undefined {
    for (let n: ts.Node | undefined = at.parent; n; n = n.parent) {
      if (ts.isFunctionLike(n) && n.parameters.some((p) => p.name.getText() === name)) return undefined;
      if (ts.isBlock(n) || ts.isSourceFile(n) || ts.isModuleBlock(n) || ts.isCaseClause(n)) {
        const found = this.declared(n.statements, name);
        if (found) return found;
      }
      if (ts.isSourceFile(n)) return this.imported(n, name);
    }
    return undefined;
  }

  private declared(statements: ts.NodeArray<ts.Statement>, name: string): ts.Expression[] | undefined {
    for (const st of statements) {
      if (ts.isVariableStatement(st))
        for (const d of st.declarationList.declarations)
          if (ts.isIdentifier(d.name) && d.name.text === name && d.initializer) {
            const init = d.initializer;
            return ts.isArrowFunction(init) || ts.isFunctionExpression(init) ? returned(init.body) : [init];
          }
      if (ts.isFunctionDeclaration(st) && st.name?.text === name) return returned(st.body);
    }
    return undefined;
  }

  private imported(sf: ts.SourceFile, name: string): ts.Expression[] | undefined {
    for (const st of sf.statements) {
      if (!ts.isImportDeclaration(st) || !ts.isStringLiteral(st.moduleSpecifier)) continue;
      const named = st.importClause?.namedBindings;
      if (!named || !ts.isNamedImports(named)) continue;
      const el = named.elements.find((e) => e.name.text === name);
      if (!el) continue;
      const target = this.byPath.get(join(dirname(sf.fileName), st.moduleSpecifier.text));
      return target ? this.declared(target.statements, (el.propertyName ?? el.name).text) : undefined;
    }
    return undefined;
  }
}

function returned(body: ts.ConciseBody | undefined): ts.Expression[] {
  if (!body) return [];
  if (!ts.isBlock(body)) return [body];
  const out: ts.Expression[] = [];
  const visit = (n: ts.Node) => {
    if (ts.isReturnStatement(n) && n.expression) out.push(n.expression);
    if (!ts.isFunctionLike(n)) ts.forEachChild(n, visit);
  };
  ts.forEachChild(body, visit);
  return out;
}

/** The shell texts an expression may stand for (UNKNOWN where it cannot be known). */
function texts(e: ts.Expression, scopes: Scopes, seen: Set<ts.Node> = new Set()): string[] {
  if (seen.has(e) || seen.size > 200) return [UNKNOWN];
  seen = new Set(seen).add(e);
  const one = (x: ts.Expression) => texts(x, scopes, seen);
  if (ts.isStringLiteral(e) || ts.isNoSubstitutionTemplateLiteral(e)) return [e.text];
  if (ts.isTemplateExpression(e)) {
    // A span with several alternatives gives one text per alternative (bounded).
    let acc = [e.head.text];
    for (const span of e.templateSpans) {
      const inner = one(span.expression);
      const next: string[] = [];
      for (const a of acc) for (const b of inner.slice(0, 8)) next.push(a + b + span.literal.text);
      acc = next.slice(0, 64);
    }
    return acc;
  }
  if (ts.isParenthesizedExpression(e) || ts.isAsExpression(e) || ts.isNonNullExpression(e)) return one(e.expression);
  if (ts.isConditionalExpression(e)) return [...one(e.whenTrue), ...one(e.whenFalse)];
  if (ts.isBinaryExpression(e)) {
    const op = e.operatorToken.kind;
    if (op === ts.SyntaxKind.PlusToken) return one(e.left).flatMap((l) => one(e.right).map((r) => l + r));
    if (op === ts.SyntaxKind.QuestionQuestionToken || op === ts.SyntaxKind.BarBarToken) return [...one(e.left), ...one(e.right)];
    if (op === ts.SyntaxKind.AmpersandAmpersandToken) return [...one(e.right), ''];
    return [UNKNOWN];
  }
  if (ts.isIdentifier(e)) return scopes.lookup(e.text, e)?.flatMap(one) ?? [UNKNOWN];
  if (ts.isPropertyAccessExpression(e)) {
    // `SERVER_ROLE.unit`: a property of a known object literal, else unknown.
    const objs = ts.isIdentifier(e.expression) ? (scopes.lookup(e.expression.text, e) ?? []) : [];
    const props = objs.flatMap((o) =>
      ts.isObjectLiteralExpression(o)
        ? o.properties.filter((p): p is ts.PropertyAssignment => ts.isPropertyAssignment(p) && p.name.getText() === e.name.text).map((p) => p.initializer)
        : [],
    );
    return props.length ? props.flatMap(one) : [UNKNOWN];
  }
  if (ts.isCallExpression(e)) {
    const callee = e.expression;
    // `shq(x)`: x quoted for the shell (as a word never a program; `sh -c ${shq(script)}` runs it).
    if (ts.isIdentifier(callee) && callee.text === 'shq') return e.arguments[0] ? one(e.arguments[0]).map((t) => `'${t.replace(/'/g, `'\\''`)}'`) : [UNKNOWN];
    // `[…].filter(Boolean).join(sep)`: the elements joined.
    if (ts.isPropertyAccessExpression(callee) && callee.name.text === 'join') {
      let arr: ts.Expression = callee.expression;
      while (ts.isCallExpression(arr) && ts.isPropertyAccessExpression(arr.expression) && arr.expression.name.text === 'filter')
        arr = arr.expression.expression;
      const sep = e.arguments[0] && ts.isStringLiteral(e.arguments[0]) ? e.arguments[0].text : ',';
      const joined = (elements: readonly ts.Expression[]) => elements.map((x) => (ts.isSpreadElement(x) ? UNKNOWN : (one(x)[0] ?? ''))).join(sep);
      if (ts.isArrayLiteralExpression(arr)) return [joined(arr.elements)];
      if (ts.isIdentifier(arr)) {
        // `const lines = […]; lines.push(…); return lines.join('\n')`: the array's elements and what the function pushes.
        const name = arr.text;
        const pushed: ts.Expression[] = [];
        let fn: ts.Node | undefined = e.parent;
        while (fn && !ts.isFunctionLike(fn) && !ts.isSourceFile(fn)) fn = fn.parent;
        const visit = (n: ts.Node) => {
          if (
            ts.isCallExpression(n) &&
            ts.isPropertyAccessExpression(n.expression) &&
            n.expression.name.text === 'push' &&
            n.expression.expression.getText() === name
          )
            pushed.push(...n.arguments);
          ts.forEachChild(n, visit);
        };
        if (fn) visit(fn);
        const arrays = (scopes.lookup(name, arr) ?? []).filter(ts.isArrayLiteralExpression);
        return [joined([...arrays.flatMap((a) => a.elements), ...pushed])];
      }
      return one(arr);
    }
    if (ts.isIdentifier(callee)) return scopes.lookup(callee.text, e)?.flatMap(one) ?? [UNKNOWN];
    return [UNKNOWN];
  }
  if (ts.isArrayLiteralExpression(e)) return e.elements.flatMap((x) => (ts.isSpreadElement(x) ? [UNKNOWN] : one(x)));
  return [UNKNOWN];
}

/** Names of constants and functions that hold a command: `SUDO_PROBE`, `MEMBER_LIST_COMMAND`, `livezCommand`, `acquireScript`. */
const NAMED_COMMAND = /(?:_COMMAND|_SCRIPT|_PROBE|[a-z]Command|[a-z]Script)s?$/;

const RECORD_FIELDS = new Set(['seen', 'code', 'exitCode', 'stdout', 'stderr', 'lines']);

/** The expressions that are commands sent to a host (a record's `command` may only describe one). */
function commandExpressions(sources: Source[]): { where: string; expr: ts.Expression }[] {
  const out: { where: string; expr: ts.Expression }[] = [];
  for (const { file, sf } of sources) {
    const at = (n: ts.Node) => `${file}:${sf.getLineAndCharacterOfPosition(n.getStart()).line + 1}`;
    // An object that also holds what a command printed (`seen`, `code`, `stdout`, `lines`) records one that ran
    // (evidence, a run-log entry): its `command` may be a description.
    const isRecord = (n: ts.Node) => ts.isObjectLiteralExpression(n.parent) && n.parent.properties.some((p) => p.name && RECORD_FIELDS.has(p.name.getText()));
    const visit = (n: ts.Node) => {
      if (ts.isPropertyAssignment(n) && n.name.getText() === 'command' && !isRecord(n)) out.push({ where: at(n), expr: n.initializer });
      if (ts.isShorthandPropertyAssignment(n) && n.name.text === 'command' && !isRecord(n)) out.push({ where: at(n), expr: n.name });
      if (ts.isCallExpression(n) && ts.isPropertyAccessExpression(n.expression) && n.expression.name.text === 'exec' && n.arguments[0])
        out.push({ where: at(n), expr: n.arguments[0] });
      if (ts.isVariableDeclaration(n) && ts.isIdentifier(n.name) && NAMED_COMMAND.test(n.name.text) && n.initializer) {
        const init = n.initializer;
        for (const e of ts.isArrowFunction(init) || ts.isFunctionExpression(init) ? returned(init.body) : [init]) out.push({ where: at(n), expr: e });
      }
      if (ts.isFunctionDeclaration(n) && n.name && NAMED_COMMAND.test(n.name.text)) for (const e of returned(n.body)) out.push({ where: at(n), expr: e });
      ts.forEachChild(n, visit);
    };
    visit(sf);
  }
  return out;
}

const SEPARATORS = /;|&&|\|\||\||&|\n|\$\(|\(|\)|\{|\}|`|\bthen\b|\belse\b|\belif\b|\bif\b|\bwhile\b|\buntil\b|\bdo\b/;

/** Unquoted words of a simple command (quotes removed; a word in single quotes is looked into: `sh -c '…'`). */
function words(simple: string): string[] {
  return simple
    .trim()
    .split(/\s+/)
    .filter(Boolean)
    .map((w) => w.replace(/^["']+|["']+$/g, ''));
}

/** The programs a shell text runs (see the head of this file). */
export function programs(text: string): string[] {
  // A single-quoted argument of `sh -c` is a script of its own; everywhere else quotes only group words.
  const found: string[] = [];
  // A listed command may carry a note after three spaces: `cat f   (streamed …)`, `… k3s   # probe x`.
  text = text.replace(/ {3,}[#(][^\n]*/g, '');
  // A command substitution `$(…)` is a script of its own; in its place the outer command has a word.
  const scripts: string[] = [];
  for (let prev = ''; prev !== text;) {
    prev = text;
    text = text.replace(/\$\(((?:[^()]|\((?:[^()])*\))*)\)/g, (m, inner: string) => (inner.startsWith('(') ? m : (scripts.push(inner), '$v')));
  }
  scripts.unshift(text);
  // A function the script defines (`pstree() { … }`) is no program.
  const functions = new Set([...text.matchAll(/(?:^|[\s;])([A-Za-z_][\w-]*)\(\)\s*\{/g)].map((m) => m[1]));
  for (const m of text.matchAll(/\b(?:sh|bash) -c '((?:[^']|'\\'')*)'/g)) scripts.push(m[1].replace(/'\\''/g, "'"));
  for (const script of scripts) {
    // Words inside quotes are arguments (an awk program, a grep pattern): blank them out, keeping `sh -c`'s.
    const expanded = script
      // A here-document's lines are its command's input, its delimiter line no command (the substitutions in
      // its lines were taken out as scripts of their own above).
      .replace(/<<-?\s*(['"]?)(\w+)\1([^\n]*)\n[\s\S]*?\n\t*\2(?=\n|$)/g, ' $3')
      // `${v:-0}` is a word; `$(( … ))` runs only the command substitutions inside it
      .replace(/\$\{[^}]*\}/g, '$v')
      .replace(/\$\(\((?:[^()]|\((?:[^()])*\))*\)\)/g, '$v');
    const unquoted = expanded.replace(/'(?:[^']|'\\'')*'/g, " 'q' ").replace(/"(?:[^"\\]|\\.)*"/g, (m) => (m.includes('$(') ? m.slice(1, -1) : ' "q" '));
    // Redirections (`2>&1`, `>/dev/null`, `< file`) are no words.
    const bare = unquoted
      .replace(/(^|\s)#[^\n]*/g, '$1')
      .replace(/\d*[<>]+&\d+/g, ' ')
      .replace(/\d*(?:>>|[<>])\s*[^\s;&|)]+/g, ' ');
    for (const part of bare.split(SEPARATORS)) {
      let w = words(part);
      // leading assignments and redirections
      while (w.length && /^[A-Za-z_][A-Za-z0-9_]*=/.test(w[0])) w = w.slice(1);
      for (;;) {
        if (!w.length) break;
        const first = w[0];
        if (first.startsWith(UNKNOWN) || first.startsWith('$') || first === 'q' || first.includes(UNKNOWN)) break;
        const name = first.includes('/') ? first.slice(first.lastIndexOf('/') + 1) : first;
        if (first === '!') {
          w = w.slice(1);
          continue;
        }
        if (['for', 'case', 'in', 'done', 'fi', 'esac'].includes(first)) break; // `for x in a b`, closing words: no program
        if (!functions.has(name)) found.push(name);
        if (name === 'sudo') w = w.slice(1).filter((x, i, all) => !(x.startsWith('-') && all.slice(0, i).every((y) => y.startsWith('-'))));
        else if (name === 'exec' || name === 'nohup' || name === 'command') w = w.slice(1).filter((x, i) => i > 0 || !x.startsWith('-'));
        else if (name === 'timeout') w = w.slice(1).filter((x, i, all) => !all.slice(0, i + 1).every((y) => y.startsWith('-') || /^\d/.test(y)));
        else if (name === 'xargs') {
          // xargs's options, `-I{}`/`-n 1` with their values
          const rest = w.slice(1);
          let i = 0;
          while (i < rest.length && rest[i].startsWith('-')) i += /^-[IinLPsdE]$/.test(rest[i]) ? 2 : 1;
          w = rest.slice(i);
        } else break;
      }
    }
  }
  return found;
}

/**
 * Code that runs only on the operator's machine and sends nothing to a host: its `command`s are what an
 * operator may run there (`bootstrap artifacts`' download commands for another machine), not host programs.
 */
const OPERATOR_SIDE = ['src/artifacts/'];

function scan() {
  const files = ['phases', 'src'].flatMap((d) => tsFiles(join(ROOT, d))).filter((f) => !OPERATOR_SIDE.some((dir) => relative(ROOT, f).startsWith(dir)));
  const sources: Source[] = files.map((f) => ({
    file: relative(ROOT, f),
    sf: ts.createSourceFile(f, readFileSync(f, 'utf8'), ts.ScriptTarget.Latest, true),
  }));
  const scopes = new Scopes(sources);
  const uses = new Map<string, Set<string>>();
  for (const { where, expr } of commandExpressions(sources)) {
    for (const text of texts(expr, scopes)) for (const p of programs(text)) uses.set(p, (uses.get(p) ?? new Set()).add(where));
  }
  return uses;
}

describe('HOST_TOOLS lists every program the engine runs on a host', () => {
  const uses = scan();

  it('the shell reading finds programs behind prefixes, pipes, loops and sh -c', () => {
    expect(
      programs(`sh -c 'i=0; until k3s kubectl get secrets; do systemctl is-active --quiet k3s && [ $i -lt 5 ] || exit 1; i=$((i+1)); sleep 1; done'`),
    ).toEqual(expect.arrayContaining(['sh', 'k3s', 'systemctl', '[', 'exit', 'sleep']));
    expect(programs(`ip netns list 2>/dev/null | awk '$1 ~ /^cni-/ { print $1 }' | xargs -r -n 1 ip netns delete`)).toEqual(['ip', 'awk', 'xargs', 'ip']);
    expect(programs(`sudo -n true`)).toEqual(['sudo', 'true']);
    expect(programs(`t() { for p in "$@"; do echo "$p"; t $(ps -e -o pid=); done; }; kill -9 $(t 1) 2>/dev/null`)).toEqual(['echo', 'kill', 'ps']);
    expect(programs(`[ "$(systemctl show -p LoadState --value k3s)" = not-found ]`)).toEqual(['[', 'systemctl']);
    expect(programs(`for t in a b; do command -v "$t" >/dev/null 2>&1 || echo "missing $t"; done`)).toEqual(['command', 'echo']);
    expect(programs(`grep -q 'x y' /etc/hosts`)).toEqual(['grep']);
    // A here-document's lines are input; a substitution in them runs.
    expect(programs(`while read -r a; do echo "$a"; done <<EOF\n$(stat -c %i f)\nrm -rf /\nEOF\ncut -c1 x`)).toEqual(['read', 'echo', 'cut', 'stat']);
  });

  it('finds the commands (the scan reaches sh -c scripts built from constants)', () => {
    // restore-passwords.ts waits with sleep inside `sh -c ${shq(…)}`; node-baseline's port check uses ss.
    expect([...uses.keys()]).toEqual(expect.arrayContaining(['sleep', 'ss', 'systemctl', 'mktemp', 'k3s']));
  });

  it('each program is in HOST_TOOLS, a shell builtin or k3s', () => {
    const missing = [...uses]
      .filter(([p]) => !(p in HOST_TOOLS) && !SHELL_BUILTINS.has(p) && !UPLOADED.has(p))
      .map(([p, where]) => `${p} (${[...where].sort().join(', ')})`)
      .sort();
    expect(missing, 'add each to HOST_TOOLS with its Debian package').toEqual([]);
  });
});
