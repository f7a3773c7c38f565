import { describe, expect, it } from '@jest/globals';
import { createHmac } from 'node:crypto';
import { signatureHeader, verifySignature } from './webhook-signature.js';

const secret = Buffer.from('x'.repeat(32));
const body = JSON.stringify({ type: 'approval.requested', approvalId: `appr_${'a'.repeat(64)}` });
const now = Date.UTC(2026, 0, 15, 12, 0, 0);

describe('the signature header', () => {
  it('is t=<unix seconds>,v1=<hex HMAC-SHA256 of "<t>.<body>">, as the README tells receivers to compute it', () => {
    const header = signatureHeader(secret, body, now + 999);
    const t = Math.floor(now / 1000);
    const expected = createHmac('sha256', secret).update(`${t}.${body}`).digest('hex');
    expect(header).toBe(`t=${t},v1=${expected}`);
  });

  it("verifies the body it was made for, at the receiver's clock within the tolerance", () => {
    expect(verifySignature(secret, signatureHeader(secret, body, now), body, now + 299_000)).toBe('ok');
  });

  it('refuses an altered body, another secret, and a timestamp moved to pass the age check', () => {
    const header = signatureHeader(secret, body, now);
    expect(verifySignature(secret, header, body.replace('requested', 'decided'), now)).toBe('mismatch');
    expect(verifySignature(Buffer.from('y'.repeat(32)), header, body, now)).toBe('mismatch');
    const later = Math.floor(now / 1000) + 600;
    expect(verifySignature(secret, header.replace(/^t=\d+/, `t=${later}`), body, later * 1000)).toBe('mismatch');
  });

  it('refuses a replay older than the tolerance (five minutes by default), and one from the future alike', () => {
    const header = signatureHeader(secret, body, now);
    expect(verifySignature(secret, header, body, now + 301_000)).toBe('stale');
    expect(verifySignature(secret, header, body, now - 301_000)).toBe('stale');
    expect(verifySignature(secret, header, body, now + 30_000, 10)).toBe('stale');
  });

  it('refuses a missing or malformed header', () => {
    expect(verifySignature(secret, undefined, body, now)).toBe('malformed');
    expect(verifySignature(secret, 'v1=abc', body, now)).toBe('malformed');
    expect(verifySignature(secret, `t=${Math.floor(now / 1000)},v1=${'0'.repeat(63)}`, body, now)).toBe('malformed');
  });
});
