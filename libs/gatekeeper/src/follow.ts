// Hot reload: feeds the signed bundles `watchPolicyBundles` follows into a gatekeeper.
import { GatehouseError, isGatehouseError } from '@gatehouse/contracts';
import { type PublishedBundle } from '@gatehouse/policies';
import { assertGatekeeperOptions, attachBundleSource, type BundleVersion, type Gatekeeper } from './gatekeeper.js';

export interface BundleFollowerOptions {
  /** Called when a published revision could not be loaded (the previous bundle stays in force). */
  readonly onError?: (error: GatehouseError, published: { readonly policySetId: string; readonly revision: number }) => void;
  /** Called after a revision took effect. */
  readonly onLoaded?: (version: BundleVersion) => void;
}

export interface BundleFollower {
  /** Pass as `watchPolicyBundles({ onChange })`: loads revisions of the followed policy set. */
  readonly onChange: (published: PublishedBundle) => void;
  /**
   * Loads the watcher's current revision (after start-up replay) and ties the gatekeeper to the
   * watcher: once it stops following the log (`current` throws POLICY.BUNDLES_UNAVAILABLE), every
   * decision is a deny with fault GATEKEEPER.BUNDLE_UNAVAILABLE. Returns the version in force.
   */
  catchUp(watcher: { current(policySetId: string): PublishedBundle | undefined }): BundleVersion;
  /** The last load error, if the newest revision was refused. */
  lastError(): GatehouseError | undefined;
}

/**
 * Follows one policy set: every trusted revision of `policySetId` is validated and swapped in
 * with `gatekeeper.load`; an invalid one keeps the old bundle and is reported to `onError`.
 * Wire it as `const f = followPolicyBundles(gk, 'payments'); const w = await
 * watchPolicyBundles({ ..., onChange: f.onChange }); f.catchUp(w);`.
 */
export function followPolicyBundles(gatekeeper: Gatekeeper, policySetId: string, options: BundleFollowerOptions = {}): BundleFollower {
  assertGatekeeperOptions('followPolicyBundles', options, ['onError', 'onLoaded']);
  let error: GatehouseError | undefined;
  const apply = (published: PublishedBundle): void => {
    if (published.policySetId !== policySetId) return;
    const current = gatekeeper.version();
    if (current.policySetId === policySetId && current.revision !== undefined && published.revision <= current.revision) return;
    try {
      const bundle = published.bundle;
      // The publication's key is authoritative: a body naming another set is refused.
      if (bundle['policySetId'] !== published.policySetId) {
        throw new GatehouseError('GATEKEEPER.POLICY_SET_MISMATCH', 'published bundle names another policy set', {
          category: 'validation',
          details: { policySetId: published.policySetId, revision: published.revision },
        });
      }
      const version = gatekeeper.load(bundle, published.revision);
      error = undefined;
      options.onLoaded?.(version);
    } catch (cause) {
      error = isGatehouseError(cause) ? cause : new GatehouseError('GATEKEEPER.LOAD_FAILED', 'published bundle could not be loaded', { category: 'internal' });
      options.onError?.(error, { policySetId: published.policySetId, revision: published.revision });
    }
  };
  return Object.freeze({
    onChange: apply,
    catchUp(watcher: { current(id: string): PublishedBundle | undefined }): BundleVersion {
      const published = watcher.current(policySetId);
      if (published !== undefined) apply(published);
      attachBundleSource(gatekeeper, () => {
        watcher.current(policySetId);
        return true;
      });
      return gatekeeper.version();
    },
    lastError: () => error,
  });
}
