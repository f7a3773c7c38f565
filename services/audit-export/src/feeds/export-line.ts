import { type DecisionRecorded } from '@gatehouse/contracts';

/** The feed formats audit-export writes. */
export const FEED_FORMATS = ['ocsf', 'cef'] as const;
export type FeedFormat = (typeof FEED_FORMATS)[number];

/** An audit record as the feeds see it: the event and where it sits on the log. */
export interface AuditRecord {
  readonly event: DecisionRecorded;
  readonly topic: string;
  readonly partition: number;
  readonly offset: string;
  /** Broker append time (LogAppendTime): fixed per record, so re-exports repeat it exactly. */
  readonly logTime: Date;
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
