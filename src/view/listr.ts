// The terminal renderer: listr2 draws one task per phase with its current step underneath.
// listr2 wants to run tasks itself, so each phase task simply waits for the engine's phase-end event;
// the engine stays the only thing that runs anything. Details (diffs, stops, summary) are printed in
// plain form once the live view has finished drawing. In check mode a finished phase's title becomes its
// one line of counts ("node-baseline  ok: 4 hosts, 12 steps, nothing would change").
import { Listr, type ListrTaskWrapper } from 'listr2';
import type { EngineEvent } from '../engine/events.ts';
import { transferLine } from './format.ts';
import { checkLine, PhaseTally } from './phase-tally.ts';
import { plainRenderer } from './plain.ts';

interface PhaseTask {
  done: Promise<void>;
  resolve: () => void;
  reject: (e: Error) => void;
  task?: ListrTaskWrapper<unknown, any, any>;
  /** Kept for a task listr starts after the event came (its phase may even have ended by then). */
  title?: string;
  lastLine?: string;
}

export function listrRenderer(write: (line: string) => void): { emit: (e: EngineEvent) => void; finish: () => Promise<void> } {
  const phases = new Map<string, PhaseTask>();
  const details: EngineEvent[] = [];
  const plain = plainRenderer(write);
  const tally = new PhaseTally();
  let check = false;
  let view: Promise<unknown> | undefined;

  const emit = (e: EngineEvent) => {
    const t = tally.see(e);
    switch (e.type) {
      case 'run-start': {
        check = e.check;
        plain(e);
        for (const id of e.phases) {
          let resolve!: () => void;
          let reject!: (err: Error) => void;
          const done = new Promise<void>((res, rej) => ((resolve = res), (reject = rej)));
          done.catch(() => undefined);
          phases.set(id, { done, resolve, reject });
        }
        const list = new Listr(
          e.phases.map((id) => ({
            title: id,
            task: async (_ctx: unknown, task: ListrTaskWrapper<unknown, any, any>) => {
              const p = phases.get(id)!;
              p.task = task;
              if (p.title) task.title = p.title;
              if (p.lastLine) task.output = p.lastLine;
              await p.done;
            },
          })),
          // listr2 would otherwise install its own SIGINT handler that exits at once (127): the run's
          // handler must cancel, release the host locks and write the journal first.
          { concurrent: false, exitOnError: true, registerSignalListeners: false, rendererOptions: { collapseErrors: false } },
        );
        view = list.run().catch(() => undefined);
        break;
      }
      case 'phase-start':
        setTitle(e.phase, `${e.phase}: ${e.title}`);
        break;
      case 'step-end':
        setOutput(e.phase, `${e.host}  ${e.title}: ${e.status}`);
        if (e.changes.length) details.push(e);
        break;
      case 'transfer':
        setOutput(e.phase, `${e.host}  ${transferLine(e)}`);
        break;
      case 'gate-start':
        setOutput(e.phase, `${e.host}  waiting: ${e.title}`);
        break;
      case 'gate-end':
        setOutput(e.phase, `${e.host}  ${e.title}: ${e.status}`);
        break;
      case 'action-start':
        setOutput(e.phase, `${e.host}  running: ${e.description}`);
        break;
      case 'action-end':
        setOutput(e.phase, `${e.host}  ${e.description}: ${e.status}`);
        break;
      case 'phase-end': {
        const p = phases.get(e.phase);
        if (check && t && e.status === 'done') setTitle(e.phase, checkLine(e.phase, t));
        if (e.status === 'done') p?.resolve();
        else p?.reject(new Error(`${e.phase} stopped`));
        break;
      }
      case 'command': // the run log's and --json's
        break;
      case 'run-end':
        for (const p of phases.values()) p.reject(new Error('not run'));
        details.push(e);
        break;
      default:
        details.push(e);
    }
  };

  function setTitle(phase: string, title: string) {
    const p = phases.get(phase);
    if (!p) return;
    p.title = title;
    if (p.task) p.task.title = title;
  }
  function setOutput(phase: string, line: string) {
    const p = phases.get(phase);
    if (!p) return;
    p.lastLine = line;
    if (p.task) p.task.output = line;
  }

  return {
    emit,
    finish: async () => {
      await view;
      for (const e of details) plain(e);
    },
  };
}
