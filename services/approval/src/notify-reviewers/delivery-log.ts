import { schemaIdent } from '@gatehouse/service-runtime';
import { type DataSource } from 'typeorm';
import { type NotificationKind } from './reviewer-notification.js';
import { type AttemptOutcome } from './retry-policy.js';

/** One delivery: a notification's event to one target. */
export interface DeliveryKey {
  readonly approvalId: string;
  readonly eventId: string;
  readonly target: string;
}

/** Why a delivery ended without an attempt, or without a status. */
export type DeliveryError = 'network' | 'timeout' | 'stopped' | 'overloaded';

/** Where deliveries are claimed and recorded (the `webhook_deliveries` table). */
export interface DeliveryLog {
  /** Records the delivery as `sending`; false when it was claimed before (another replica, an earlier run). */
  claim(key: DeliveryKey, about: { readonly kind: NotificationKind; readonly tenant: string }): Promise<boolean>;
  /** Records an attempt's outcome; with `done`, also that the delivery ended so. */
  attempted(key: DeliveryKey, attempts: number, outcome: AttemptOutcome | DeliveryError, done?: 'sent' | 'failed'): Promise<void>;
}

const statusOf = (outcome: AttemptOutcome | DeliveryError): number | null => (typeof outcome === 'string' ? null : (outcome.status ?? null));
const errorOf = (outcome: AttemptOutcome | DeliveryError): DeliveryError | null =>
  typeof outcome === 'string' ? outcome : outcome.kind === 'retryable' ? (outcome.error ?? null) : null;

/** The delivery log in the service's schema: the claim is the row's primary key, so it holds across replicas. */
export class PostgresDeliveryLog implements DeliveryLog {
  private readonly table: string;

  constructor(
    private readonly dataSource: DataSource,
    schema: string,
  ) {
    this.table = `${schemaIdent(schema)}.webhook_deliveries`;
  }

  async claim(key: DeliveryKey, about: { readonly kind: NotificationKind; readonly tenant: string }): Promise<boolean> {
    const rows: unknown[] = await this.dataSource.query(
      `INSERT INTO ${this.table} (approval_id, event_id, target, kind, tenant, status) VALUES ($1, $2, $3, $4, $5, 'sending')
       ON CONFLICT DO NOTHING RETURNING 1`,
      [key.approvalId, key.eventId, key.target, about.kind, about.tenant],
    );
    return rows.length === 1;
  }

  async attempted(key: DeliveryKey, attempts: number, outcome: AttemptOutcome | DeliveryError, done?: 'sent' | 'failed'): Promise<void> {
    // Only a delivery still `sending` changes: an ended one is never reopened.
    await this.dataSource.query(
      `UPDATE ${this.table} SET attempts = $4, last_status = $5, last_error = $6,
         status = COALESCE($7, status), done_at = CASE WHEN $7::text IS NULL THEN NULL ELSE now() END
       WHERE approval_id = $1 AND event_id = $2 AND target = $3 AND status = 'sending'`,
      [key.approvalId, key.eventId, key.target, attempts, statusOf(outcome), errorOf(outcome), done ?? null],
    );
  }
}
