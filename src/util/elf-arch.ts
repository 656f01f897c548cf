// The CPU architecture a binary is built for, from its ELF header (e_machine), without running it.
import { open } from 'node:fs/promises';

const MACHINES: Record<number, string> = { 0x3e: 'x86_64', 0xb7: 'aarch64', 0x28: 'armv7l', 0xf3: 'riscv64', 0x15: 'ppc64le', 0x16: 's390x' };

/** 'x86_64', 'aarch64', …; 'any' for a script (#!); 'unknown' otherwise. */
export function archOfHeader(head: Buffer): string {
  if (head.subarray(0, 2).toString() === '#!') return 'any';
  if (head.length < 20 || head.readUInt32BE(0) !== 0x7f454c46) return 'unknown';
  return MACHINES[head.readUInt16LE(18)] ?? `elf-machine-${head.readUInt16LE(18)}`;
}

export async function archOfFile(path: string): Promise<string> {
  const fh = await open(path, 'r');
  try {
    const buf = Buffer.alloc(20);
    const { bytesRead } = await fh.read(buf, 0, 20, 0);
    return archOfHeader(buf.subarray(0, bytesRead));
  } finally {
    await fh.close();
  }
}
