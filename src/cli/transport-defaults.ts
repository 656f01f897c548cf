// The real side effects a run uses by default: SSH to the hosts.
import type { Remote, Transport } from '../transport/types.ts';

export function defaultTransport(): Transport {
  return {
    connect: async () => {
      throw new Error('the SSH transport is not wired into the CLI yet');
    },
  };
}

export async function defaultPreflight(_remote: Remote): Promise<void> {}
