// The terminal renderer: listr2 draws one task per phase with its current step underneath.
// listr2 wants to run tasks itself, so each phase task simply waits for the engine's phase-end event;
// the engine stays the only thing that runs anything. Details (diffs, stops, summary) are printed in
// plain form once the live view has finished drawing.
import { Listr, type ListrTaskWrapper } from 'listr2';
import type { EngineEvent } from '../engine/events.ts';
import { transferLine } from './format.ts';
import { plainRenderer } from './plain.ts';

interface PhaseTask {
  done: Promise<void>;
  resolve: () => void;
  reject: (e: Error) => void;
  task?: ListrTaskWrapper<unknown, any, any>;
  lastLine?: string;
}

export function listrRenderer(write: (line: string) => void): { emit: (e: EngineEvent) => void; finish: () => Promise<void> } {
  const phases = new Map<string, PhaseTask>();
  const details: EngineEvent[] = [];
  const plain = plainRenderer(write);
  let view: Promise<unknown> | undefined;

  const emit = (e: EngineEvent) => {
    switch (e.type) {
      case 'run-start': {
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
        if (e.status === 'done') p?.resolve();
        else p?.reject(new Error(`${e.phase} stopped`));
        break;
      }
      case 'run-end':
        for (const p of phases.values()) p.reject(new Error('not run'));
        details.push(e);
        break;
      default:
        details.push(e);
    }
  };

  function setTitle(phase: string, title: string) {
    const t = phases.get(phase)?.task;
    if (t) t.title = title;
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
