// Pure: what iproute2 prints, read.

/** The interface names of `ip -o link show` (without the `@peer` of a veth or VLAN). */
export function linkNames(links: string): string[] {
  return links
    .split('\n')
    .map((l) => l.match(/^\d+:\s+([^:@\s]+)/)?.[1])
    .filter((x): x is string => Boolean(x));
}
