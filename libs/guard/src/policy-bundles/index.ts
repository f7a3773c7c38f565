// @gatehouse/guard/policy-bundles: the policy-bundle watcher, now in @gatehouse/gatekeeper
// (it needs no agent framework); re-exported so existing imports keep working.
export { type PolicyBundleWatcher, type PolicyBundleWatcherOptions, type PublishedBundle, watchPolicyBundles } from '@gatehouse/gatekeeper/policy-bundles';
