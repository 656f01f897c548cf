import { describe, expect, it } from 'vitest';
import { SubstitutionProblem, substitute } from '../../src/gitops/envsubst.ts';
import { substituteTree } from '../../src/gitops/substitute-tree.ts';

const vars = { HOST: '192.168.2.9', PORT: '6443', NAME: 'Cilium', EMPTY: '', TBD: 'TBD-PROD-VIP', ON: 'true', MULTI: '10.0.0.1\n' };

function problem(text: string): SubstitutionProblem {
  try {
    substitute(text, vars);
  } catch (err) {
    if (err instanceof SubstitutionProblem) return err;
    throw err;
  }
  throw new Error(`${text} substituted without a problem`);
}

describe('Flux-compatible substitution', () => {
  it.each([
    ['${HOST}', '192.168.2.9'],
    ['https://${HOST}:${PORT}', 'https://192.168.2.9:6443'],
    ['$HOST stays', '$HOST stays'],
    ['$${HOST} is escaped', '${HOST} is escaped'],
    ['cost: $$5', 'cost: $5'],
    ['${#NAME}', '6'],
    ['${NAME^^}', 'CILIUM'],
    ['${NAME,,}', 'cilium'],
    ['${NAME,}', 'cilium'],
    ['${HOST:8}', '2.9'],
    ['${HOST:0:7}', '192.168'],
    ['${HOST//./-}', '192-168-2-9'],
    ['${HOST/192/10}', '10.168.2.9'],
    ['${UNSET:=10.0.0.9}', '10.0.0.9'],
    ['${EMPTY:-fallback}', 'fallback'],
    ['${UNSET=${HOST}}', '192.168.2.9'],
    ['${HOST:=ignored}', '192.168.2.9'],
    ['${MULTI}', '10.0.0.1'],
    ['${UNSET:=a$$b}', 'a$$b'],
    ['${HOST/\\//x}', '192.168.2.9'],
  ])('%s → %s', (text, out) => {
    expect(substitute(text, vars)).toBe(out);
  });

  it.each([
    ['${UNSET}', 'UNSET', 'undefined'],
    ['${EMPTY}', 'EMPTY', 'empty'],
    ['${TBD}', 'TBD', 'placeholder'],
    ['${UNSET^^}', 'UNSET', 'undefined'],
    ['${UNSET:=}', 'UNSET', 'empty'],
    ['${UNSET:=TBD-LATER}', 'UNSET', 'placeholder'],
    ['${HOST-default}', 'HOST', 'syntax'],
    ['${HOST#192.}', 'HOST', 'unsupported'],
    ['${HOST', 'HOST', 'syntax'],
  ])('%s fails closed, naming %s (%s)', (text, variable, kind) => {
    const p = problem(text);
    expect(p.variable).toBe(variable);
    expect(p.problem).toBe(kind);
  });
});

describe('substituting a resource as kustomize-controller does', () => {
  it('re-types plain scalars after substitution, keeps strings that would be quoted', () => {
    const { value, problems } = substituteTree({ a: '${PORT}', b: '${ON}', c: 'port ${PORT}', d: '- ${PORT}', e: 6443, f: ['${HOST}'] }, vars);
    expect(problems).toEqual([]);
    expect(value).toEqual({ a: 6443, b: true, c: 'port 6443', d: '- 6443', e: 6443, f: ['192.168.2.9'] });
  });

  it('collects every problem with its path', () => {
    const { problems } = substituteTree({ spec: { values: { x: '${UNSET}', y: ['${EMPTY}'] } } }, vars);
    expect(problems.map((p) => [p.path, p.problem.variable, p.problem.problem])).toEqual([
      ['spec.values.x', 'UNSET', 'undefined'],
      ['spec.values.y[0]', 'EMPTY', 'empty'],
    ]);
  });
});
