/**
 * A client's IP address as the bytes an EnvelopeRequest carries (Java's InetAddress.getAddress:
 * 4 bytes for IPv4, 16 for IPv6) and back. An IPv4-mapped IPv6 address travels as its IPv4
 * address, as Java sees a dual-stack socket's IPv4 peer.
 */
import { isIP, isIPv4 } from 'node:net';

/** The host of a session's `host:port` (an IPv6 host is written without brackets). */
export function hostOfClientAddress(address: string): string {
  const colon = address.lastIndexOf(':');
  return colon === -1 ? address : address.slice(0, colon);
}

/** The address's bytes, or null for what is not an IP address literal. */
export function ipAddressBytes(host: string): Buffer | null {
  const mapped = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/i.exec(host);
  const literal = mapped?.[1] ?? host;
  if (isIPv4(literal)) return Buffer.from(literal.split('.').map(Number));
  if (isIP(literal) !== 6) return null;
  const [head, tail] = literal.includes('::') ? literal.split('::') : [literal, null];
  const groups = (part: string) => (part === '' ? [] : part.split(':'));
  const words = (part: string): number[] =>
    groups(part).flatMap((g) => {
      if (!g.includes('.')) return [Number.parseInt(g, 16)];
      const [a, b, c, d] = g.split('.').map(Number) as [number, number, number, number];
      return [(a << 8) | b, (c << 8) | d];
    });
  const front = words(head!);
  const back = tail === null ? [] : words(tail);
  const all = [...front, ...new Array<number>(8 - front.length - back.length).fill(0), ...back];
  const out = Buffer.alloc(16);
  for (const [i, word] of all.entries()) out.writeUInt16BE(word, i * 2);
  return out;
}

/** The address written as the broker writes its peers' (Node's form), or null for a length that is no address. */
export function ipAddressString(bytes: Buffer): string | null {
  if (bytes.length === 4) return [...bytes].join('.');
  if (bytes.length !== 16) return null;
  if (bytes.subarray(0, 10).every((b) => b === 0) && bytes.readUInt16BE(10) === 0xffff) return [...bytes.subarray(12)].join('.');
  const words = Array.from({ length: 8 }, (_, i) => bytes.readUInt16BE(i * 2));
  // The longest run of two or more zero words is written "::" (RFC 5952).
  let bestStart = -1;
  let bestLength = 1;
  for (let i = 0; i < 8; ) {
    if (words[i] !== 0) {
      i++;
      continue;
    }
    let j = i;
    while (j < 8 && words[j] === 0) j++;
    if (j - i > bestLength) {
      bestStart = i;
      bestLength = j - i;
    }
    i = j;
  }
  const hex = (ws: number[]) => ws.map((w) => w.toString(16)).join(':');
  if (bestStart === -1) return hex(words);
  return `${hex(words.slice(0, bestStart))}::${hex(words.slice(bestStart + bestLength))}`;
}
