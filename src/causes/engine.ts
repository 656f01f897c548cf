import { defineCauses } from './define.ts';

// Causes raised by the engine itself (run set-up, locks, interruption), not by a phase.
export const engineCauses = defineCauses({
  GATE_FAILED: {
    title: 'A gate stopped the run for a reason it could not name',
    meaning: 'A check failed and what was seen matched no known cause. The evidence shows what was seen.',
    remedy: 'Read the evidence and the run log; if this repeats, add a named cause for it.',
  },
});
