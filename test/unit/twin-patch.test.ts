import { describe, expect, it } from 'vitest';
import { applyPatch, jsonPatch, mergePatch, patchTypeOf, strategicMerge } from '../../lab/twin/api/patch.ts';
import { matchFields, matchLabels, parseLabelSelector } from '../../lab/twin/api/selectors.ts';

describe('k3s twin patches', () => {
  it('merge patch replaces lists and deletes null keys', () => {
    expect(mergePatch({ a: 1, b: [1, 2], c: { d: 1 } }, { a: null, b: [3], c: { e: 2 } })).toEqual({ b: [3], c: { d: 1, e: 2 } });
  });

  it('strategic merge merges containers by name and honours $patch: delete', () => {
    const target = {
      spec: {
        containers: [
          { name: 'a', image: 'x' },
          { name: 'b', image: 'y' },
        ],
      },
    };
    const out = strategicMerge(target, {
      spec: {
        containers: [
          { name: 'a', image: 'z' },
          { name: 'b', $patch: 'delete' },
          { name: 'c', image: 'w' },
        ],
      },
    });
    expect(out.spec.containers).toEqual([
      { name: 'a', image: 'z' },
      { name: 'c', image: 'w' },
    ]);
  });

  it('json patch adds, replaces and fails on a missing path', () => {
    expect(jsonPatch({ metadata: { labels: {} } }, [{ op: 'add', path: '/metadata/labels/a~1b', value: '1' }])).toEqual({
      metadata: { labels: { 'a/b': '1' } },
    });
    expect(() => jsonPatch({}, [{ op: 'replace', path: '/x', value: 1 }])).toThrow(/missing/);
  });

  it('knows the patch content types, including server-side apply', () => {
    expect(patchTypeOf('application/apply-patch+yaml')).toBe('apply');
    expect(patchTypeOf('application/strategic-merge-patch+json')).toBe('strategic');
    expect(applyPatch('apply', { data: { a: '1' } }, { data: { b: '2' } })).toEqual({ data: { a: '1', b: '2' } });
  });
});

describe('k3s twin selectors', () => {
  it('matches equality, set-based and existence label selectors', () => {
    const l = { app: 'web', tier: 'front' };
    expect(matchLabels(parseLabelSelector('app=web,tier!=back'), l)).toBe(true);
    expect(matchLabels(parseLabelSelector('app in (db, cache)'), l)).toBe(false);
    expect(matchLabels(parseLabelSelector('tier,!gone'), l)).toBe(true);
    expect(matchLabels(parseLabelSelector('app notin (web)'), l)).toBe(false);
  });

  it('matches field selectors on dotted paths', () => {
    expect(matchFields('metadata.name=x,metadata.namespace!=y', { metadata: { name: 'x', namespace: 'z' } })).toBe(true);
    expect(matchFields('metadata.name=x', { metadata: { name: 'q' } })).toBe(false);
  });
});
