import { createHmac, timingSafeEqual } from 'node:crypto';

/** The header every delivery carries: `t=<unix seconds>,v1=<hex HMAC-SHA256 of "<t>.<body>">`. */
export const SIGNATURE_HEADER = 'x-gatehouse-signature';

/** How old a signature timestamp a receiver should accept, seconds (what `verifySignature` allows by default). */
export const DEFAULT_TOLERANCE_S = 300;

const mac = (secret: Buffer, timestamp: number, body: string): string =>
  createHmac('sha256', secret).update(`${timestamp}.${body}`, 'utf8').digest('hex');

/**
 * The signature header value for `body` sent at `nowMs`. The timestamp is inside the MAC, so a
 * receiver that rejects old timestamps also rejects a captured delivery replayed later.
 */
export function signatureHeader(secret: Buffer, body: string, nowMs: number): string {
  const timestamp = Math.floor(nowMs / 1000);
  return `t=${timestamp},v1=${mac(secret, timestamp, body)}`;
}

/** Why a receiver refuses a delivery, or `ok`. */
export type SignatureCheck = 'ok' | 'malformed' | 'stale' | 'mismatch';

/**
 * What a receiver does with the header (the reference for the README): parse `t` and `v1`, refuse a
 * timestamp more than `toleranceS` from its own clock, recompute the MAC over `"<t>.<raw body>"`
 * and compare in constant time.
 */
export function verifySignature(secret: Buffer, header: string | undefined, body: string, nowMs: number, toleranceS = DEFAULT_TOLERANCE_S): SignatureCheck {
  const match = /^t=(\d{1,12}),v1=([0-9a-f]{64})$/.exec(header ?? '');
  if (!match?.[1] || !match[2]) return 'malformed';
  const timestamp = Number(match[1]);
  if (Math.abs(nowMs / 1000 - timestamp) > toleranceS) return 'stale';
  const expected = Buffer.from(mac(secret, timestamp, body), 'hex');
  return timingSafeEqual(expected, Buffer.from(match[2], 'hex')) ? 'ok' : 'mismatch';
}
