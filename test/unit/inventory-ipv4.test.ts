import { describe, expect, it } from 'vitest';
import { cidrContains, cidrsOverlap, formatIPv4, parseCidr, parseIPv4 } from '../../src/inventory/ipv4.ts';

describe('IPv4 parsing', () => {
  it.each(['192.168.2.10', '0.0.0.0', '255.255.255.255'])('%s is an address', (text) => {
    expect(formatIPv4(parseIPv4(text)!)).toBe(text);
  });

  it.each(['192.168.2', '192.168.2.256', '192.168.02.1', '1.2.3.4.5', 'a.b.c.d', '', '192.168.2.-1'])('%j is not', (text) => {
    expect(parseIPv4(text)).toBeNull();
  });

  it('reads networks and says when host bits are set', () => {
    expect(parseCidr('192.168.2.0/24')).toMatchObject({ prefix: 24, size: 256, aligned: true });
    expect(parseCidr('192.168.2.5/24')).toMatchObject({ aligned: false });
    expect(parseCidr('192.168.2.0/33')).toBeNull();
    expect(parseCidr('192.168.2.0')).toBeNull();
  });

  it('containment and overlap', () => {
    const lan = parseCidr('192.168.2.0/24')!;
    expect(cidrContains(lan, parseIPv4('192.168.2.255')!)).toBe(true);
    expect(cidrContains(lan, parseIPv4('192.168.3.0')!)).toBe(false);
    expect(cidrsOverlap(parseCidr('10.42.0.0/16')!, parseCidr('10.43.0.0/16')!)).toBe(false);
    expect(cidrsOverlap(parseCidr('10.42.0.0/16')!, parseCidr('10.0.0.0/8')!)).toBe(true);
  });
});
