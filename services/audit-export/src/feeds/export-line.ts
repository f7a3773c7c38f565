import { type DecisionRecorded } from '@gatehouse/contracts';

/** The feed formats audit-export writes. */
export const FEED_FORMATS = ['ocsf', 'cef'] as const;
export type FeedFormat = (typeof FEED_FORMATS)[number];

/**
 * Whether the record's source vouched for it (`audit-sources.ts` in contracts): `verified` (a
 * checkpoint signed by a key that may speak for its source and tenant lists it), `unverified`
 * (none does), `forbidden` (only checkpoints whose key may not claim it, or forged ones, do).
 */
export interface RecordVerification {
  readonly status: 'verified' | 'unverified' | 'forbidden';
  /** Why it is forbidden (`forbidden-source`, `forbidden-tenant`, `untrusted-checkpoint`); null otherwise. */
  readonly reason: string | null;
  /** The key of the checkpoint that verified (or was refused for) it. */
  readonly keyId: string | null;
  /** That checkpoint's event id. */
  readonly checkpoint: string | null;
}

/** An audit record as the feeds see it: the event and where it sits on the log. */
export interface AuditRecord {
  readonly event: DecisionRecorded;
  readonly topic: string;
  readonly partition: number;
  readonly offset: string;
  /** Broker append time (LogAppendTime): fixed per record, so re-exports repeat it exactly. */
  readonly logTime: Date;
  /** The verdict on its source, as the projection held it when the record was exported (absent: not judged). */
  readonly verification?: RecordVerification;
}

/** One line of one feed, ready for a sink. `text` never contains a newline. */
export interface ExportLine {
  readonly eventId: string;
  readonly format: FeedFormat;
  readonly text: string;
  readonly partition: number;
  readonly offset: string;
  readonly logTime: Date;
  /** Used for metrics labels only. */
  readonly outcome: DecisionRecorded['payload']['outcome'];
  readonly boundary: DecisionRecorded['payload']['boundary'];
}
