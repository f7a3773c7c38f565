import { type z } from 'zod';
import { AuditChainCheckpointV1, DecisionRecordedV1 } from './events/audit.js';
import { ApprovalCancelledV1, ApprovalDecidedV1, ApprovalDecidedV2, ApprovalExpiredV1, ApprovalRequestedV1, ApprovalRequestedV2, ApprovalUsedV1 } from './events/approvals.js';
import {
  LedgerKeyCompletedV1,
  LedgerKeyExpiredV1,
  LedgerKeyFailedV1,
  LedgerKeyReconciledV1,
  LedgerKeyReservedV1,
  LedgerKeyResolvedV1,
  LedgerKeyTakenOverV1,
  LedgerRateConsumedV1,
  LedgerCheckpointV1,
} from './events/ledger.js';
import { PolicyBundlePublishedV1 } from './events/policies.js';

const DAY_MS = 24 * 60 * 60 * 1000;

/** Everything provisioning and code need to know about one topic. */
export interface TopicSpec {
  readonly name: string;
  /** What the record key is (documentation; `recordKey` computes it). */
  readonly key: string;
  readonly partitions: number;
  /** Topic-level configs applied at provisioning, e.g. `message.timestamp.type`. */
  readonly configs: Readonly<Record<string, string>>;
  /** The event schemas this topic may carry; empty for the raw dead-letter topic. */
  readonly events: readonly z.ZodType<{ type: string; version: number; tenant: string; subject: string }>[];
}

// Time rules (expiry, stale leases, rate windows) read the broker's append time, so
// every topic of record uses LogAppendTime: a replay sees the same timestamps.
const appendTime = { 'message.timestamp.type': 'LogAppendTime' } as const;

/** The topic catalog: the only place topic names and configs are written down. */
export const TOPICS = {
  audit: {
    name: 'gatehouse.audit.v1',
    key: 'tenant/run (envelope tenant and subject)',
    // Sized for growth (issue 19): a partition is the unit a replica owns, so 12 lets up to 12
    // replicas share the work. A deployment may provision fewer (GATEHOUSE_TOPIC_PARTITIONS);
    // adding partitions later moves keys: docs/capacity.md says how.
    partitions: 12,
    configs: { ...appendTime, 'cleanup.policy': 'delete', 'retention.ms': String(90 * DAY_MS) },
    // Decisions, and the producers' signed checkpoints over them (`audit-sources.ts`).
    events: [DecisionRecordedV1, AuditChainCheckpointV1],
  },
  approvals: {
    name: 'gatehouse.approvals.v1',
    key: 'approval id (envelope subject)',
    partitions: 12,
    // Deleted by time, not compacted: compaction keeps one record per key, and the fold needs an
    // approval's whole lifecycle. 60 days covers the longest lifecycle (a 30-day wait, a 7-day
    // grant) and twice the approval service's default memory of settled approvals (7 days each):
    // what `approvalLogRetentionMs` says a fold of what remains needs to reach the service's state
    // (`libs/approvals/src/retention.spec.ts`). A longer GATEHOUSE_APPROVAL_RETAIN_MS needs this
    // raised to match (provisioning sets the catalog value; raise both together).
    // No size limit (it would delete the oldest records whatever their age); the approval
    // service refuses to start on a topic that could delete what it needs (`assertTopicRetention`).
    configs: { ...appendTime, 'cleanup.policy': 'delete', 'retention.ms': String(60 * DAY_MS), 'retention.bytes': '-1' },
    events: [ApprovalRequestedV1, ApprovalRequestedV2, ApprovalDecidedV1, ApprovalDecidedV2, ApprovalExpiredV1, ApprovalCancelledV1, ApprovalUsedV1],
  },
  ledger: {
    name: 'gatehouse.ledger.v1',
    key: 'idempotency or rate key (envelope subject)',
    partitions: 12,
    // Deleted by time: a pending or ambiguous key has no end in time, so the ledger service writes
    // a signed checkpoint of each partition's state into that partition (LedgerCheckpoint, every
    // GATEHOUSE_LEDGER_CHECKPOINT_MS, default 1 hour) and a fold of what remains starts from the last
    // checkpoint whose cut the partition still holds. 14 days leave the service that long to be down
    // (or its checkpoints to fail) before a start finds no checkpoint; then it refuses to start
    // (FOLD.HISTORY_LOST) rather than fold a log that lost a reservation. The service refuses a
    // topic that keeps less than two checkpoint intervals or two days (an unchanged partition is
    // checkpointed again daily), or compacts, or has a size limit.
    configs: { ...appendTime, 'cleanup.policy': 'delete', 'retention.ms': String(14 * DAY_MS), 'retention.bytes': '-1' },
    events: [
      LedgerKeyReservedV1,
      LedgerKeyCompletedV1,
      LedgerKeyFailedV1,
      LedgerKeyTakenOverV1,
      LedgerKeyReconciledV1,
      LedgerKeyResolvedV1,
      LedgerKeyExpiredV1,
      LedgerRateConsumedV1,
      LedgerCheckpointV1,
    ],
  },
  policies: {
    name: 'gatehouse.policies.v1',
    key: 'policy set id and revision, `<set>@<revision>` (envelope subject): compaction keeps every version',
    partitions: 1,
    configs: { ...appendTime, 'cleanup.policy': 'compact', 'min.compaction.lag.ms': String(DAY_MS) },
    events: [PolicyBundlePublishedV1],
  },
  // Request/reply of the policy service's `evaluate` for agents not written in TypeScript
  // (NestJS microservices' Kafka transport: correlation id and reply topic in the headers).
  policyEvaluations: {
    name: 'gatehouse.policy-evaluations.v1',
    key: 'policy set id',
    partitions: 1,
    configs: { ...appendTime, 'cleanup.policy': 'delete', 'retention.ms': String(DAY_MS) },
    events: [],
  },
  policyEvaluationReplies: {
    name: 'gatehouse.policy-evaluations.v1.reply',
    key: 'none (the correlation id is a header)',
    partitions: 1,
    configs: { ...appendTime, 'cleanup.policy': 'delete', 'retention.ms': String(DAY_MS) },
    events: [],
  },
  deadLetter: {
    name: 'gatehouse.dead-letter.v1',
    key: 'original topic/partition/offset',
    partitions: 1,
    configs: { ...appendTime, 'cleanup.policy': 'delete', 'retention.ms': String(30 * DAY_MS) },
    events: [],
  },
} as const satisfies Record<string, TopicSpec>;

export type TopicId = keyof typeof TOPICS;
export type TopicName = (typeof TOPICS)[TopicId]['name'];

/** Every topic spec, in catalog order. */
export const TOPIC_LIST: readonly TopicSpec[] = Object.values(TOPICS);

/** The spec of a topic by name, or undefined when the name is not in the catalog. */
export function topicByName(name: string): TopicSpec | undefined {
  return TOPIC_LIST.find((t) => t.name === name);
}

/** The events a topic carries, as a union of their parsed types. */
export type TopicEvent<T extends TopicId> = z.infer<(typeof TOPICS)[T]['events'][number]>;

/** The record key of an event on its topic: keeps one subject's events in one partition, in order. */
export function recordKey(event: { tenant: string; subject: string }, topic: TopicSpec): string {
  return topic.name === TOPICS.audit.name ? `${event.tenant}/${event.subject}` : event.subject;
}

/**
 * The topic's name on the cluster. A namespace prefixes every name, so tests (a random
 * namespace per test) and side-by-side environments never share a topic.
 */
export function topicName(topicId: TopicId, namespace?: string): string {
  const name = TOPICS[topicId].name;
  return namespace ? `${namespace}.${name}` : name;
}
