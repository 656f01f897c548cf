// `--no-backup`: a rolling change without the backup it takes first — said before the run starts, and
// refused where there is no rolling change to skip it for (a restore, a replace, another command).
import { describe, expect, it } from 'vitest';
import { parseCommand } from '../../cli/args.ts';
import { UsageError } from '../../src/errors.ts';
import type { RunPlan } from '../../src/engine/session.ts';
import { withRollingOptions } from '../../modes/build.ts';
import { rollingLeftOut, rollingOptions } from '../../phases/k3s/rolling-facts.ts';

const plan = { phases: [], check: false, resume: false, warnings: ['an inventory warning'] } as unknown as RunPlan;

describe('--no-backup', () => {
  it('is a run option, refused with --restore, --replace and on other commands', () => {
    expect(parseCommand(['prod', '--no-backup'])).toMatchObject({ kind: 'run', noBackup: true });
    expect(parseCommand(['prod'])).not.toHaveProperty('noBackup');
    expect(() => parseCommand(['prod', '--no-backup', '--restore', 'latest'])).toThrow(/--no-backup belongs to a build's rolling change, not to --restore/);
    expect(() => parseCommand(['prod', '--no-backup', '--replace', 'k3s-prod-2'])).toThrow(UsageError);
    expect(() => parseCommand(['backup', 'prod', '--no-backup'])).toThrow(/--no-backup belongs to a run/);
  });

  it('is said as a warning before the run starts, and reaches the rolling phases as their option', () => {
    const quiet = withRollingOptions(plan, { backup: true, backupId: 'b1' });
    expect(quiet.warnings).toEqual(['an inventory warning']);
    expect(quiet.facts).toEqual([rollingOptions({ backup: true, backupId: 'b1' }), rollingLeftOut(true)]);
    const loud = withRollingOptions(plan, { backup: false, backupId: 'b1' });
    expect(loud.warnings).toContainEqual(
      expect.stringContaining('--no-backup: a rolling change (an upgrade, a changed flag) restarts k3s WITHOUT the backup it takes first'),
    );
    expect(loud.facts).toEqual([rollingOptions({ backup: false, backupId: 'b1' }), rollingLeftOut(true)]);
  });
});
