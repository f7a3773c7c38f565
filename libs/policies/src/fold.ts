import { createHash } from 'node:crypto';
import { canonicalJson, checkGrant, type JsonValue, type Keyring, type TopicEvent, type UntrustedReason } from '@gatehouse/contracts';

export type PolicyEvent = TopicEvent<'policies'>;

/** One published bundle version, as the log recorded it. */
export interface PublishedBundle {
  readonly policySetId: string;
  readonly revision: number;
  readonly digest: string;
  readonly publishedBy: string;
  readonly bundle: Readonly<Record<string, JsonValue>>;
  /** Log append time (ms) of the publication. */
  readonly publishedAt: number;
  /** The key that signed it. */
  readonly keyId: string;
}

export type PolicyVerdict =
  | { readonly kind: 'accepted' }
  | { readonly kind: 'rejected'; readonly reason: 'untrusted-signature'; readonly untrusted: UntrustedReason }
  | { readonly kind: 'rejected'; readonly reason: 'stale-revision' | 'digest-mismatch' };

/**
 * The policy bundles a reader holds: the newest trusted revision per policy set. Only the policy
 * service publishes: a bundle counts only when signed by a key of it in `keyring`.
 */
export interface PolicyBundlesState {
  readonly current: Map<string, PublishedBundle>;
  /** Every trusted version, by `versionKey(policySetId, revision)`: what a service lists and diffs. */
  readonly versions: Map<string, PublishedBundle>;
  readonly keyring: Keyring;
  /** Publications the fold ignored for their signature. */
  readonly untrusted: { count: number };
}

export function createPolicyBundlesState(keyring: Keyring): PolicyBundlesState {
  return { current: new Map(), versions: new Map(), keyring, untrusted: { count: 0 } };
}

/**
 * The record key (envelope subject) of one version: `<policySetId>@<revision>`. The policies
 * topic is compacted by key, so every version stays on the log and a retried publication of
 * the same version is deduplicated.
 */
export function versionKey(policySetId: string, revision: number): string {
  return `${policySetId}@${revision}`;
}

/** The digest a bundle is published under: hex sha-256 of its canonical JSON. */
export function bundleDigest(bundle: Readonly<Record<string, JsonValue>>): string {
  return createHash('sha256').update(canonicalJson(bundle)).digest('hex');
}

/**
 * Advances `state` by one publication: it must be signed by the policy service, carry the digest
 * of its own bundle, and be newer than the revision held (an older or equal one is a replay or a
 * rollback attempt and changes nothing). Deterministic: a function of the records and the keyring.
 */
export function applyPolicyEvent(state: PolicyBundlesState, event: PolicyEvent, logTime: number): PolicyVerdict {
  const trust = checkGrant(event, state.keyring);
  if (!trust.trusted) {
    state.untrusted.count += 1;
    return Object.freeze({ kind: 'rejected', reason: 'untrusted-signature', untrusted: trust.reason });
  }
  const p = event.payload;
  if (bundleDigest(p.bundle) !== p.digest) return Object.freeze({ kind: 'rejected', reason: 'digest-mismatch' });
  const held = state.current.get(p.policySetId);
  if (held && held.revision >= p.revision) return Object.freeze({ kind: 'rejected', reason: 'stale-revision' });
  const version = Object.freeze({ policySetId: p.policySetId, revision: p.revision, digest: p.digest, publishedBy: p.publishedBy, bundle: p.bundle, publishedAt: logTime, keyId: trust.keyId ?? '' });
  state.current.set(p.policySetId, version);
  state.versions.set(versionKey(p.policySetId, p.revision), version);
  return Object.freeze({ kind: 'accepted' });
}
