// IPv4 addresses and networks as 32-bit numbers: enough arithmetic for the inventory contracts
// (containment, overlap, ranges). Pure and small; IPv6 is out of scope for inventory v1.

/** Parse a dotted quad ("192.168.2.10") to an unsigned 32-bit number, or null if it is not one. */
export function parseIPv4(text: string): number | null {
  const parts = text.split('.');
  if (parts.length !== 4) return null;
  let value = 0;
  for (const part of parts) {
    // NOTE: leading zeros are refused: "010" reads as octal in some tools and decimal in others.
    if (!/^(0|[1-9]\d{0,2})$/.test(part)) return null;
    const octet = Number(part);
    if (octet > 255) return null;
    value = value * 256 + octet;
  }
  return value;
}

export function formatIPv4(value: number): string {
  return [24, 16, 8, 0].map((shift) => Math.floor(value / 2 ** shift) % 256).join('.');
}

export interface IPv4Network {
  /** First address of the network (host bits zero). */
  base: number;
  prefix: number;
  /** Number of addresses in the network. */
  size: number;
}

/**
 * Parse "192.168.2.0/24". Returns null if malformed; `aligned` is false when host bits are set
 * ("192.168.2.5/24"), which is almost always a typo for the network address.
 */
export function parseCidr(text: string): (IPv4Network & { aligned: boolean }) | null {
  const m = /^([^/]+)\/(\d{1,2})$/.exec(text);
  if (!m) return null;
  const address = parseIPv4(m[1]);
  const prefix = Number(m[2]);
  if (address === null || prefix > 32) return null;
  const size = 2 ** (32 - prefix);
  const base = address - (address % size);
  return { base, prefix, size, aligned: base === address };
}

export function formatCidr(net: IPv4Network): string {
  return `${formatIPv4(net.base)}/${net.prefix}`;
}

export function cidrContains(net: IPv4Network, address: number): boolean {
  return address >= net.base && address < net.base + net.size;
}

export function cidrsOverlap(a: IPv4Network, b: IPv4Network): boolean {
  return a.base < b.base + b.size && b.base < a.base + a.size;
}
