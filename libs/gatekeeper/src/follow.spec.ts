import { describe, expect, it } from '@jest/globals';
import { type JsonValue } from '@gatehouse/contracts';
import { type PublishedBundle } from '@gatehouse/policies';
import { GatehouseError } from '@gatehouse/contracts';
import { createGatekeeper, followPolicyBundles } from './index.js';

const bundleOf = (policySetId: string, rule: string): Record<string, JsonValue> => ({
  policySetId,
  policies: [{ id: 'p', version: '1', priority: 1, match: {}, rules: { [rule]: 'true' } }],
});
const published = (policySetId: string, revision: number, bundle: Record<string, JsonValue>): PublishedBundle => ({
  policySetId,
  revision,
  digest: `d${revision}`,
  publishedBy: 'policy-service',
  bundle,
  publishedAt: 0,
  keyId: 'k',
});
const ctx = { identity: { agent: 'a' }, call: { tool: 't' }, input: {} };

describe('followPolicyBundles', () => {
  it('loads new revisions of the followed set and ignores other sets and stale revisions', () => {
    const gk = createGatekeeper({ bundle: bundleOf('payments', 'allowWhen'), revision: 1 });
    const loaded: unknown[] = [];
    const follower = followPolicyBundles(gk, 'payments', { onLoaded: (v) => loaded.push(v) });
    follower.onChange(published('other', 9, bundleOf('other', 'denyWhen')));
    expect(gk.evaluate(ctx).effect).toBe('allow');
    follower.onChange(published('payments', 2, bundleOf('payments', 'denyWhen')));
    expect(gk.evaluate(ctx)).toMatchObject({ effect: 'deny', bundle: { policySetId: 'payments', revision: 2 } });
    follower.onChange(published('payments', 2, bundleOf('payments', 'allowWhen')));
    expect(gk.version().revision).toBe(2);
    expect(loaded).toEqual([{ policySetId: 'payments', revision: 2 }]);
  });

  it('keeps the old bundle and reports a typed error for an invalid revision', () => {
    const gk = createGatekeeper({ bundle: bundleOf('payments', 'allowWhen'), revision: 1 });
    const errors: string[] = [];
    const follower = followPolicyBundles(gk, 'payments', { onError: (e) => errors.push(e.code) });
    follower.onChange(published('payments', 2, { policySetId: 'payments', policies: [{ id: 'p' }] }));
    follower.onChange(published('payments', 3, bundleOf('elsewhere', 'denyWhen')));
    expect(errors).toEqual(['GATEKEEPER.BUNDLE_INVALID', 'GATEKEEPER.POLICY_SET_MISMATCH']);
    expect(follower.lastError()?.code).toBe('GATEKEEPER.POLICY_SET_MISMATCH');
    expect(gk.evaluate(ctx)).toMatchObject({ effect: 'allow', bundle: { revision: 1 } });
  });

  it('catches up with the watcher current revision', () => {
    const gk = createGatekeeper({ bundle: bundleOf('payments', 'allowWhen') });
    const follower = followPolicyBundles(gk, 'payments');
    const watcher = { current: (id: string) => (id === 'payments' ? published('payments', 7, bundleOf('payments', 'denyWhen')) : undefined) };
    expect(follower.catchUp(watcher)).toEqual({ policySetId: 'payments', revision: 7 });
    expect(gk.evaluate(ctx).effect).toBe('deny');
  });

  it('denies every call once the watcher it follows stops, in audit mode says so, and allows again when it follows', () => {
    for (const mode of ['enforce', 'audit'] as const) {
      const gk = createGatekeeper({ bundle: bundleOf('payments', 'allowWhen'), mode });
      let following = true;
      const watcher = {
        current: (id: string) => {
          if (!following) throw new GatehouseError('POLICY.BUNDLES_UNAVAILABLE', 'the policy bundles no longer follow the log', { category: 'unavailable' });
          return id === 'payments' ? published('payments', 3, bundleOf('payments', 'allowWhen')) : undefined;
        },
      };
      followPolicyBundles(gk, 'payments').catchUp(watcher);
      expect(gk.evaluate(ctx)).toMatchObject({ effect: 'allow', bundle: { revision: 3 } });
      following = false;
      const stopped = gk.evaluate(ctx);
      if (mode === 'enforce') expect(stopped).toMatchObject({ effect: 'deny', fault: 'GATEKEEPER.BUNDLE_UNAVAILABLE', bundle: { revision: 3 } });
      else expect(stopped).toMatchObject({ effect: 'allow', wouldHave: { effect: 'deny', fault: 'GATEKEEPER.BUNDLE_UNAVAILABLE' } });
      expect(gk.simulate(ctx, { mode: 'enforce' })).toMatchObject({ effect: 'deny', fault: 'GATEKEEPER.BUNDLE_UNAVAILABLE' });
      expect(gk.explain(ctx).decision).toEqual(stopped);
      following = true;
      expect(gk.evaluate(ctx)).toMatchObject({ effect: 'allow', mode });
    }
  });

  it('a gatekeeper no follower caught up keeps the bundle it was given', () => {
    const gk = createGatekeeper({ bundle: bundleOf('payments', 'allowWhen') });
    followPolicyBundles(gk, 'payments');
    expect(gk.evaluate(ctx).effect).toBe('allow');
  });
});
