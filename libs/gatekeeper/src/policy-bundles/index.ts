import { GatehouseError, type Keyring } from '@gatehouse/contracts';
import { FoldReader } from '@gatehouse/kafka';
import { applyPolicyEvent, createPolicyBundlesState, type PolicyBundlesState, type PolicyVerdict, type PublishedBundle } from '@gatehouse/policies';
import { type Kafka } from 'kafkajs';
import { assertGatekeeperOptions } from '../gatekeeper.js';
import { randomUUID } from 'node:crypto';

export type { PublishedBundle } from '@gatehouse/policies';

export interface PolicyBundleWatcherOptions {
  readonly kafka: Kafka;
  /**
   * The policy service's public keys (`keyringFromEnv()` reads GATEHOUSE_TRUSTED_KEYS_FILE): a
   * bundle not signed by one of them never takes effect, and is reported on the audit topic.
   */
  readonly keyring: Keyring;
  /** Topic namespace (see `topicName`); omit in production. */
  readonly namespace?: string;
  /** Envelope source of the security events it reports (default `guard:policies-<random>`). */
  readonly source?: string;
  /** Called after a new trusted revision of a policy set took effect. */
  readonly onChange?: (bundle: PublishedBundle) => void;
  /** Longest the start-up replay may take, ms (default 30,000). */
  readonly replayTimeoutMs?: number;
}

export interface PolicyBundleWatcher {
  /**
   * The newest trusted revision of `policySetId`, or undefined when none was published. Throws
   * POLICY.BUNDLES_UNAVAILABLE once the watcher stopped following the log: a guard then has no
   * current bundle to enforce and must fail closed.
   */
  current(policySetId: string): PublishedBundle | undefined;
  stats(): { readonly policySets: number; readonly untrusted: number; readonly following: boolean };
  close(): Promise<void>;
}

/**
 * Follows `gatehouse.policies.v1`: replays it from offset 0, then picks up every new revision
 * the policy service publishes without a restart. Only signed publications count; a forged one
 * is ignored and reported as `SECURITY.UNTRUSTED_GRANT`.
 */
export async function watchPolicyBundles(options: PolicyBundleWatcherOptions): Promise<PolicyBundleWatcher> {
  assertGatekeeperOptions('watchPolicyBundles', options, ['kafka', 'keyring', 'namespace', 'source', 'onChange', 'replayTimeoutMs']);
  // One state, created here so the change callback can read it while the reader is still starting.
  const state = createPolicyBundlesState(options.keyring);
  const reader = await FoldReader.start<'policies', PolicyBundlesState, PolicyVerdict>({
    kafka: options.kafka,
    topicId: 'policies',
    namespace: options.namespace,
    fold: { create: () => state, apply: applyPolicyEvent },
    untrusted: { keyring: options.keyring, source: options.source ?? `guard:policies-${randomUUID().slice(0, 8)}` },
    replayTimeoutMs: options.replayTimeoutMs ?? 30_000,
    onApplied: (record, verdict, live) => {
      if (!live || verdict.kind !== 'accepted') return;
      const bundle = state.current.get(record.event.payload.policySetId);
      if (bundle) options.onChange?.(bundle);
    },
  });
  return Object.freeze({
    current(policySetId: string): PublishedBundle | undefined {
      if (reader.phase !== 'following') {
        throw new GatehouseError('POLICY.BUNDLES_UNAVAILABLE', 'the policy bundles no longer follow the log', { category: 'unavailable', retryable: true });
      }
      return state.current.get(policySetId);
    },
    stats: () => ({ policySets: state.current.size, untrusted: state.untrusted.count, following: reader.phase === 'following' }),
    close: () => reader.stop(),
  });
}
