import { isIP } from 'node:net';

/** Where an IP address points, as far as server-side request forgery is concerned. */
export type AddressClass =
  | 'public'
  | 'loopback'
  | 'private'
  | 'link-local'
  | 'metadata'
  | 'unspecified'
  | 'carrier-grade-nat'
  | 'multicast'
  | 'broadcast'
  | 'reserved';

type Range4 = readonly [base: string, prefix: number, cls: AddressClass];

// Cloud instance-metadata and credential endpoints. Listed before the ranges that contain
// them so that allowing private addresses never allows these by accident.
const METADATA_V4 = new Set([
  '169.254.169.254', // AWS, GCP, Azure, OCI, DigitalOcean instance metadata
  '169.254.170.2', // AWS ECS task credentials
  '169.254.170.23', // AWS EKS Pod Identity agent
  '100.100.100.200', // Alibaba Cloud
  '168.63.129.16', // Azure WireServer: a public-looking address that only the platform answers
  '192.0.0.192', // Oracle Cloud (classic)
]);
const METADATA_V6 = new Set(['fd00:ec2::254', 'fd00:ec2::23']); // AWS IMDS and EKS Pod Identity over IPv6

// First match wins, so narrower ranges come before the ones that contain them.
const RANGES_V4: readonly Range4[] = [
  ['0.0.0.0', 8, 'unspecified'], // "this network"; 0.0.0.0 reaches the local host on Linux
  ['10.0.0.0', 8, 'private'],
  ['100.64.0.0', 10, 'carrier-grade-nat'],
  ['127.0.0.0', 8, 'loopback'],
  ['169.254.0.0', 16, 'link-local'],
  ['172.16.0.0', 12, 'private'],
  ['192.0.0.0', 24, 'reserved'], // IETF protocol assignments
  ['192.0.2.0', 24, 'reserved'], // documentation
  ['192.88.99.0', 24, 'reserved'], // deprecated 6to4 relay anycast
  ['192.168.0.0', 16, 'private'],
  ['198.18.0.0', 15, 'reserved'], // benchmarking
  ['198.51.100.0', 24, 'reserved'], // documentation
  ['203.0.113.0', 24, 'reserved'], // documentation
  ['224.0.0.0', 4, 'multicast'],
  ['255.255.255.255', 32, 'broadcast'],
  ['240.0.0.0', 4, 'reserved'],
];
const COMPILED_V4 = RANGES_V4.map(([base, prefix, cls]) => ({ base: ipv4ToInt(base), mask: prefix === 0 ? 0 : (~0 << (32 - prefix)) >>> 0, cls }));

/**
 * Classifies an IPv4 or IPv6 address (IPv4-mapped and NAT64/6to4-embedded IPv4 by the address
 * they carry). Throws a TypeError for anything that is not an IP address.
 */
export function classifyAddress(address: string): AddressClass {
  if (typeof address !== 'string') throw new TypeError('classifyAddress: expected an IP address string');
  // Zone ids (`fe80::1%eth0`) only scope a link-local address; the class is the address's own.
  const bare = address.includes('%') ? address.slice(0, address.indexOf('%')) : address;
  const version = isIP(bare);
  if (version === 4) return classifyV4(ipv4ToInt(bare));
  if (version === 6) return classifyV6(parseIPv6(bare));
  throw new TypeError('classifyAddress: not an IP address');
}

/** True only for addresses in public unicast space. */
export function isPublicAddress(address: string): boolean {
  return classifyAddress(address) === 'public';
}

function classifyV4(value: number): AddressClass {
  if (METADATA_V4.has(intToIPv4(value))) return 'metadata';
  for (const range of COMPILED_V4) {
    if (((value & range.mask) >>> 0) === range.base) return range.cls;
  }
  return 'public';
}

function classifyV6(bytes: Uint8Array): AddressClass {
  const words = Array.from({ length: 8 }, (_, i) => ((bytes[2 * i] ?? 0) << 8) | (bytes[2 * i + 1] ?? 0));
  const [w0 = 0, w1 = 0, w2 = 0, w3 = 0, w4 = 0, w5 = 0] = words;
  const upperZero = w0 === 0 && w1 === 0 && w2 === 0 && w3 === 0 && w4 === 0;
  const embedded = (offset: number): number => (((bytes[offset] ?? 0) << 24) | ((bytes[offset + 1] ?? 0) << 16) | ((bytes[offset + 2] ?? 0) << 8) | (bytes[offset + 3] ?? 0)) >>> 0;

  if (words.every((w) => w === 0)) return 'unspecified';
  if (upperZero && w5 === 0 && words[6] === 0 && words[7] === 1) return 'loopback';
  // ::ffff:a.b.c.d reaches the IPv4 host a.b.c.d through a dual-stack socket.
  if (upperZero && w5 === 0xffff) return classifyV4(embedded(12));
  // Deprecated IPv4-compatible form (::a.b.c.d): no legitimate public use left.
  if (upperZero && w5 === 0) return 'reserved';
  // NAT64 well-known prefix: a translator forwards to the embedded IPv4 address, metadata included.
  if (w0 === 0x64 && w1 === 0xff9b && w2 === 0 && w3 === 0 && w4 === 0 && w5 === 0) return classifyV4(embedded(12));
  if (w0 === 0x64 && w1 === 0xff9b && w2 === 1) return 'private'; // local-use NAT64
  // 6to4 relays to the IPv4 address in bits 16..48.
  if (w0 === 0x2002) return classifyV4(embedded(2));
  if (METADATA_V6.has(canonicalV6(words))) return 'metadata';
  if ((w0 & 0xfe00) === 0xfc00) return 'private'; // unique local fc00::/7
  if ((w0 & 0xffc0) === 0xfe80) return 'link-local';
  if ((w0 & 0xffc0) === 0xfec0) return 'private'; // deprecated site-local
  if ((w0 & 0xff00) === 0xff00) return 'multicast';
  if (w0 === 0x2001 && w1 < 0x200) return 'reserved'; // IETF protocol assignments, Teredo included
  if (w0 === 0x2001 && w1 === 0xdb8) return 'reserved'; // documentation
  if ((w0 & 0xfff0) === 0x3ff0) return 'reserved'; // documentation (3fff::/20)
  // Only 2000::/3 is allocated global unicast; everything else (100::/64 discard, ...) is not.
  if ((w0 & 0xe000) !== 0x2000) return 'reserved';
  return 'public';
}

function ipv4ToInt(address: string): number {
  return address.split('.').reduce((acc, part) => ((acc << 8) | Number(part)) >>> 0, 0);
}

function intToIPv4(value: number): string {
  return [value >>> 24, (value >>> 16) & 0xff, (value >>> 8) & 0xff, value & 0xff].join('.');
}

// Input is already known to be a valid IPv6 address (net.isIP), so this only has to expand it.
function parseIPv6(address: string): Uint8Array {
  let text = address.toLowerCase();
  const bytes = new Uint8Array(16);
  const tail: number[] = [];
  const dotted = /(\d+\.\d+\.\d+\.\d+)$/.exec(text);
  if (dotted?.[1] !== undefined) {
    const v4 = ipv4ToInt(dotted[1]);
    tail.push(v4 >>> 16, v4 & 0xffff);
    text = text.slice(0, text.length - dotted[1].length);
    if (text.endsWith(':') && !text.endsWith('::')) text = text.slice(0, -1);
  }
  const [head = '', rest] = text.split('::');
  const headWords = head === '' ? [] : head.split(':').map((w) => parseInt(w, 16));
  const restWords = rest === undefined || rest === '' ? [] : rest.split(':').map((w) => parseInt(w, 16));
  const after = [...restWords, ...tail];
  const words = rest === undefined ? [...headWords, ...tail] : [...headWords, ...new Array<number>(8 - headWords.length - after.length).fill(0), ...after];
  words.forEach((word, i) => {
    bytes[2 * i] = word >>> 8;
    bytes[2 * i + 1] = word & 0xff;
  });
  return bytes;
}

function canonicalV6(words: readonly number[]): string {
  return new URL(`http://[${words.map((w) => w.toString(16)).join(':')}]/`).hostname.slice(1, -1);
}
