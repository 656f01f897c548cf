// runbooks/replace-server.md stays in step with the tool: the causes it names exist, and the command blocks
// the lab test runs are there with the placeholders the test fills.
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { isCauseId } from '../../src/causes/catalogue.ts';
import { labBlock, placeholders } from '../support/runbook-blocks.ts';

const text = readFileSync(new URL('../../runbooks/replace-server.md', import.meta.url), 'utf8');

describe('runbooks/replace-server.md', () => {
  it('names only causes of the catalogue', () => {
    const named = [...new Set([...text.matchAll(/`([A-Z][A-Z0-9]*(?:_[A-Z0-9]+)+)`/g)].map((m) => m[1]))];
    expect(named).toContain('QUORUM_AT_RISK');
    expect(named.filter((id) => !isCauseId(id))).toEqual([]);
  });

  it('has the check, replace and confirm blocks the lab test runs, with the placeholders it fills', () => {
    const used = ['check', 'replace', 'confirm'].flatMap((name) => placeholders(labBlock(text, name).code));
    expect([...new Set(used)].sort()).toEqual(['env', 'server', 'survivor', 'user']);
  });
});
