// A host as the engine sees it: the one type the run context and the phase contract (phase.ts) share.
/** A host a phase runs on. */
export interface HostRef {
  name: string;
  address: string;
  role: 'server' | 'agent';
  founder: boolean;
}
