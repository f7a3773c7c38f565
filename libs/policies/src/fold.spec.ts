import { describe, expect, it } from '@jest/globals';
import { createEvent, PolicyBundlePublishedV1, signEvent } from '@gatehouse/contracts';
import { TEST_KEYRING, TEST_KEYS, testSigningKey } from '@gatehouse/contracts/testing';
import { applyPolicyEvent, bundleDigest, createPolicyBundlesState, versionKey } from './fold.js';

const publication = (revision: number, bundle: Record<string, number>, digest = bundleDigest(bundle)) =>
  createEvent(PolicyBundlePublishedV1, { source: 'service:policy', tenant: 'acme', subject: 'refunds' }, { policySetId: 'refunds', revision, digest, publishedBy: 'user:ops', bundle });
const signed = (revision: number, bundle: Record<string, number>) => signEvent(publication(revision, bundle), TEST_KEYS.policy);

describe('the policy bundle fold', () => {
  it('holds the newest trusted revision per policy set, with the key that signed it', () => {
    const state = createPolicyBundlesState(TEST_KEYRING);
    expect(applyPolicyEvent(state, signed(1, { max: 1 }), 10)).toEqual({ kind: 'accepted' });
    expect(applyPolicyEvent(state, signed(3, { max: 3 }), 20)).toEqual({ kind: 'accepted' });
    expect(state.current.get('refunds')).toMatchObject({ revision: 3, bundle: { max: 3 }, publishedAt: 20, keyId: TEST_KEYS.policy.keyId });
  });

  it('ignores an unsigned, a foreign-signed and a wrongly-signed bundle, and counts them', () => {
    const state = createPolicyBundlesState(TEST_KEYRING);
    applyPolicyEvent(state, signed(1, { max: 1 }), 10);
    expect(applyPolicyEvent(state, publication(2, { max: 1e9 }), 11)).toEqual({ kind: 'rejected', reason: 'untrusted-signature', untrusted: 'unsigned' });
    expect(applyPolicyEvent(state, signEvent(publication(2, { max: 1e9 }), testSigningKey('policy', 'rogue')), 12)).toMatchObject({ reason: 'untrusted-signature', untrusted: 'unknown-key' });
    expect(applyPolicyEvent(state, signEvent(publication(2, { max: 1e9 }), TEST_KEYS.approval), 13)).toMatchObject({ reason: 'untrusted-signature', untrusted: 'wrong-signer' });
    expect(state.current.get('refunds')?.revision).toBe(1);
    expect(state.untrusted.count).toBe(3);
  });

  it('refuses a rollback to an older revision and a bundle that is not the one its digest names', () => {
    const state = createPolicyBundlesState(TEST_KEYRING);
    applyPolicyEvent(state, signed(2, { max: 2 }), 10);
    expect(applyPolicyEvent(state, signed(1, { max: 1e9 }), 11)).toEqual({ kind: 'rejected', reason: 'stale-revision' });
    expect(applyPolicyEvent(state, signed(2, { max: 2 }), 12)).toEqual({ kind: 'rejected', reason: 'stale-revision' });
    const swapped = signEvent(publication(3, { max: 1e9 }, bundleDigest({ max: 3 })), TEST_KEYS.policy);
    expect(applyPolicyEvent(state, swapped, 13)).toEqual({ kind: 'rejected', reason: 'digest-mismatch' });
    expect(state.current.get('refunds')?.bundle).toEqual({ max: 2 });
  });
});

describe('versions', () => {
  it('keeps every trusted version by set and revision, for listing and diffing', () => {
    const state = createPolicyBundlesState(TEST_KEYRING);
    applyPolicyEvent(state, signed(1, { max: 1 }), 10);
    applyPolicyEvent(state, signed(2, { max: 2 }), 20);
    applyPolicyEvent(state, publication(3, { max: 3 }), 30); // unsigned: not a version
    expect([...state.versions.keys()]).toEqual([versionKey('refunds', 1), versionKey('refunds', 2)]);
    expect(versionKey('refunds', 2)).toBe('refunds@2');
  });
});
