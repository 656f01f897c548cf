// The catalogue of causes and runbooks/causes.md must describe the same set of ids.
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { allCauses } from '../../src/causes/catalogue.ts';

const runbook = readFileSync(new URL('../../runbooks/causes.md', import.meta.url), 'utf8');
const sections = [...runbook.matchAll(/^## ([A-Z0-9_]+)\s*$/gm)].map((m) => m[1]);

describe('cause catalogue ↔ runbooks/causes.md', () => {
  it('has a runbook section for every cause', () => {
    const missing = allCauses()
      .map((c) => c.id)
      .filter((id) => !sections.includes(id));
    expect(missing).toEqual([]);
  });

  it('has no runbook section naming a cause the catalogue lacks', () => {
    const ids = new Set<string>(allCauses().map((c) => c.id));
    expect(sections.filter((s) => !ids.has(s))).toEqual([]);
  });

  it('has each section once, with what it means and what to do', () => {
    expect(new Set(sections).size).toBe(sections.length);
    for (const id of sections) {
      const body = runbook.split(new RegExp(`^## ${id}\\s*$`, 'm'))[1].split(/^## /m)[0];
      expect(body, id).toMatch(/\*\*Means:\*\*/);
      expect(body, id).toMatch(/\*\*Do:\*\*/);
    }
  });

  it('gives every cause a title, meaning, remedy and runbook anchor', () => {
    for (const c of allCauses()) {
      expect(c.title.length, c.id).toBeGreaterThan(5);
      expect(c.meaning.length, c.id).toBeGreaterThan(10);
      expect(c.remedy.length, c.id).toBeGreaterThan(10);
      expect(c.runbook).toBe(`runbooks/causes.md#${c.id.toLowerCase()}`);
    }
  });
});
