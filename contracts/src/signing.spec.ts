import { describe, expect, it } from '@jest/globals';
import { createPublicKey, generateKeyPairSync } from 'node:crypto';
import { ApprovalDecidedV1, ApprovalRequestedV1 } from './events/approvals.js';
import { createEvent, decodeEvent, encodeEvent } from './codec.js';
import { checkGrant, createKeyring, keyIdOf, signEvent, signingKeyFromPem, trustedEntryOf } from './signing.js';

const pem = () => generateKeyPairSync('ed25519').privateKey.export({ type: 'pkcs8', format: 'pem' }).toString();
const approvalKey = signingKeyFromPem('approval-2026-11', 'approval', pem());
const nextApprovalKey = signingKeyFromPem('approval-2026-12', 'approval', pem());
const ledgerKey = signingKeyFromPem('ledger-2026-11', 'ledger', pem());
const approvalId = `appr_${'a'.repeat(64)}`;
const decided = () =>
  createEvent(ApprovalDecidedV1, { source: 'service:approval', tenant: 'acme', subject: approvalId }, { approvalId, verdict: 'approve', reviewer: { id: 'user:alice', role: 'approver', kind: 'human' } });

describe('signed grant events', () => {
  const keyring = createKeyring([trustedEntryOf(approvalKey), trustedEntryOf(ledgerKey)]);

  it('verifies a signed event after it went over the wire', () => {
    const signed = signEvent(decided(), approvalKey);
    const wire = decodeEvent('approvals', encodeEvent('approvals', signed));
    expect(checkGrant(wire, keyring)).toEqual({ trusted: true, keyId: 'approval-2026-11' });
  });

  it('refuses an unsigned, tampered, unknown-key or wrong-signer grant, and names why', () => {
    expect(checkGrant(decided(), keyring)).toEqual({ trusted: false, reason: 'unsigned', signer: 'approval' });
    const signed = signEvent(decided(), approvalKey);
    const tampered = { ...signed, payload: { ...signed.payload, reviewer: { id: 'agent:billing', role: 'agent', kind: 'agent' as const } } };
    expect(checkGrant(tampered, keyring)).toMatchObject({ trusted: false, reason: 'bad-signature' });
    expect(checkGrant(signEvent(decided(), nextApprovalKey), keyring)).toMatchObject({ trusted: false, reason: 'unknown-key', keyId: 'approval-2026-12' });
    // The ledger's key cannot sign an approval.
    expect(checkGrant(signEvent(decided(), ledgerKey), keyring)).toMatchObject({ trusted: false, reason: 'wrong-signer' });
    expect(checkGrant({ ...signed, signature: { keyId: 'x', alg: 'Ed25519', value: 'short' } }, keyring)).toMatchObject({ trusted: false, reason: 'malformed-signature' });
  });

  it('needs no signature on events that grant nothing (a request)', () => {
    const request = createEvent(
      ApprovalRequestedV1,
      { source: 'guard:x', tenant: 'acme', subject: approvalId },
      {
        approvalId,
        scope: { tenant: 'acme', connectorId: 'c', executionId: 'r', argumentsHash: 'b'.repeat(64) },
        arguments: {},
        requester: { id: 'agent:x', role: 'agent', kind: 'agent' },
        reason: 'r',
        deadline: new Date().toISOString(),
      },
    );
    expect(checkGrant(request, keyring)).toEqual({ trusted: true });
  });

  it('accepts old and new keys during a rotation, and only the new one after', () => {
    const both = createKeyring([trustedEntryOf(approvalKey), trustedEntryOf(nextApprovalKey)]);
    const old = signEvent(decided(), approvalKey);
    const fresh = signEvent(decided(), nextApprovalKey);
    expect([checkGrant(old, both).trusted, checkGrant(fresh, both).trusted]).toEqual([true, true]);
    const rotated = createKeyring([trustedEntryOf(nextApprovalKey)]);
    expect([checkGrant(old, rotated).trusted, checkGrant(fresh, rotated).trusted]).toEqual([false, true]);
  });

  it('refuses malformed key material with a typed error that shows none of it', () => {
    expect(() => signingKeyFromPem('k', 'approval', 'not a key')).toThrow(expect.objectContaining({ code: 'SIGNING.KEY_INVALID' }));
    const rsa = generateKeyPairSync('rsa', { modulusLength: 1024 }).privateKey.export({ type: 'pkcs8', format: 'pem' }).toString();
    expect(() => signingKeyFromPem('k', 'approval', rsa)).toThrow('Ed25519');
    expect(() => createKeyring([{ keyId: 'k', signer: 'approval', publicKey: 'garbage' }])).toThrow(expect.objectContaining({ code: 'SIGNING.KEY_INVALID' }));
    const entry = trustedEntryOf(approvalKey);
    expect(() => createKeyring([entry, entry])).toThrow('twice');
  });
});

describe('key ids', () => {
  it('derives a stable id from the public key when none is configured', () => {
    const id = keyIdOf('approval', createPublicKey(approvalKey.privateKey));
    expect(id).toMatch(/^approval-[\da-f]{16}$/);
    expect(keyIdOf('approval', createPublicKey(approvalKey.privateKey))).toBe(id);
    expect(keyIdOf('approval', createPublicKey(nextApprovalKey.privateKey))).not.toBe(id);
  });
});
