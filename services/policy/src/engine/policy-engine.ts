import { createEvent, type JsonValue, type Keyring, PolicyBundlePublishedV1, signEvent, type SigningKey, type TopicEvent } from '@gatehouse/contracts';
import { FoldEngine, type FoldLog, type FoldProjection } from '@gatehouse/kafka';
import { bundleDigest, type PolicyBundlesState, type PolicyVerdict, type PublishedBundle, versionKey } from '@gatehouse/policies';
import { type Kafka } from 'kafkajs';
import { PolicyError } from '../errors.js';
import { policyProjection } from '@gatehouse/policy-projection';

export const POLICY_SOURCE = 'service:policy';

export interface PolicyEngineOptions {
  readonly kafka: Kafka;
  readonly namespace?: string | undefined;
  readonly signingKey: SigningKey;
  readonly keyring: Keyring;
  readonly projection?: FoldProjection<'policies', PolicyBundlesState> | undefined;
  readonly decisionDeadlineMs?: number;
  /** Least time between two snapshots of the fold, ms (see `FoldEngineOptions`). */
  readonly snapshotIntervalMs?: number;
  readonly log?: FoldLog;
}

/**
 * The policy service's decision point over `gatehouse.policies.v1`: a publication is signed by
 * this service, appended, and counts once the fold (the same one every guard runs) accepted it;
 * two operators publishing on top of the same revision race, and the log order picks one.
 */
export class PolicyEngine {
  private engine!: FoldEngine<'policies', PolicyBundlesState, PolicyVerdict>;

  private constructor(private readonly signingKey: SigningKey) {}

  static async start(options: PolicyEngineOptions): Promise<PolicyEngine> {
    const policies = new PolicyEngine(options.signingKey);
    policies.engine = await FoldEngine.start({
      kafka: options.kafka,
      namespace: options.namespace,
      projection: options.projection,
      topicId: 'policies',
      fold: policyProjection(options.keyring).fold,
      decisionDeadlineMs: options.decisionDeadlineMs,
      snapshotIntervalMs: options.snapshotIntervalMs,
      log: options.log,
      unavailable: (reason, cause) => new PolicyError('POLICY.UNAVAILABLE', { reason }, cause),
      untrusted: { keyring: options.keyring, source: POLICY_SOURCE },
      // Its decisions and security reports are the policy service's: signed checkpoints say so (attack 6).
      auditKey: options.signingKey,
    });
    return policies;
  }

  /** The newest version of `policySetId` the fold trusts. */
  current(policySetId: string): PublishedBundle | undefined {
    return this.engine.state.current.get(policySetId);
  }

  version(policySetId: string, revision: number): PublishedBundle | undefined {
    return this.engine.state.versions.get(versionKey(policySetId, revision));
  }

  /** Every policy set's newest version. */
  sets(): PublishedBundle[] {
    return [...this.engine.state.current.values()].sort((a, b) => (a.policySetId < b.policySetId ? -1 : 1));
  }

  /** Every version of `policySetId`, oldest first. */
  versions(policySetId: string): PublishedBundle[] {
    return [...this.engine.state.versions.values()].filter((v) => v.policySetId === policySetId).sort((a, b) => a.revision - b.revision);
  }

  /**
   * Publishes `bundle` (already validated) as the next revision of `policySetId`: signed, appended,
   * and answered once the fold applied it. POLICY.CONFLICT when another publication took that
   * revision first.
   */
  async publish(policySetId: string, bundle: Record<string, JsonValue>, publishedBy: string, tenant: string): Promise<PublishedBundle> {
    const revision = (this.current(policySetId)?.revision ?? 0) + 1;
    const event = signEvent(
      createEvent(PolicyBundlePublishedV1, { source: POLICY_SOURCE, tenant, subject: versionKey(policySetId, revision) }, { policySetId, revision, digest: bundleDigest(bundle), publishedBy, bundle }),
      this.signingKey,
    );
    const verdict = await this.engine.decide(event);
    if (verdict.kind !== 'accepted') throw verdict.reason === 'stale-revision' ? new PolicyError('POLICY.CONFLICT') : new PolicyError('POLICY.INTERNAL');
    const published = this.version(policySetId, revision);
    if (!published) throw new PolicyError('POLICY.INTERNAL');
    return published;
  }

  /** Appends a decision record to the audit topic with the service's producer. */
  async record(event: TopicEvent<'audit'>): Promise<void> {
    await this.engine.publishTo('audit', event);
  }

  status() {
    return { ...this.engine.status(), policySets: this.engine.state.current.size, versions: this.engine.state.versions.size, untrustedGrants: this.engine.state.untrusted.count };
  }

  stop(): Promise<void> {
    return this.engine.stop();
  }
}
