import { type FoldLog } from '@gatehouse/kafka';
import { DATA_SOURCE, nestFoldLog } from '@gatehouse/service-runtime';
import { type DataSource } from 'typeorm';
import { type CommittedChange } from '../engine/approval-engine.js';
import { abortableSleep, type DeliveryDeps, deliverWebhook } from './deliver-webhook.js';
import { type DeliveryError, type DeliveryKey, type DeliveryLog, PostgresDeliveryLog } from './delivery-log.js';
import { notificationOf, type ReviewerNotification } from './reviewer-notification.js';
import { type AttemptOutcome, DEFAULT_RETRY, type RetryPolicy } from './retry-policy.js';
import { webhookBody } from './webhook-bodies.js';
import { type ReviewerWebhooks, type WebhookTarget } from './webhook-config.js';

/** Nest injection token of the service's `ReviewerNotifier`. */
export const REVIEWER_NOTIFIER = Symbol('REVIEWER_NOTIFIER');

/** This replica's deliveries since it started (`GET /v1/approvals-status` → `webhooks`); the table holds them all. */
export interface WebhookCounts {
  readonly sent: number;
  /** Given up: refused, out of attempts or time, stopped, or not recordable. */
  readonly failed: number;
  /** Claimed and not yet ended. */
  readonly pending: number;
}

export interface ReviewerNotifierOptions {
  /** None: nothing is ever sent. */
  readonly webhooks: ReviewerWebhooks | undefined;
  readonly deliveries: DeliveryLog;
  readonly retry?: RetryPolicy;
  /** Default: the global `fetch`. */
  readonly send?: DeliveryDeps['send'];
  /** Deliveries running at once; past it a new one is recorded failed (`overloaded`) without an attempt. Default 1000. */
  readonly maxInFlight?: number;
  readonly log?: FoldLog;
}

/** How one claimed delivery ended, as recorded and logged. */
interface Ended {
  readonly delivered: boolean;
  readonly attempts: number;
  readonly outcome: AttemptOutcome | DeliveryError;
  readonly why: string;
}

/**
 * Sends reviewers' webhooks for the live changes the engine reports once the projection committed
 * them: each (event, target) is claimed in the delivery table first and delivered by whoever
 * claimed it, so at most once across replicas and restarts. A delivery never holds the fold back,
 * and its failure changes nothing but its own row.
 */
export class ReviewerNotifier {
  private readonly stopping = new AbortController();
  private readonly running = new Set<Promise<void>>();
  private sent = 0;
  private failed = 0;
  private readonly log: FoldLog;

  constructor(private readonly options: ReviewerNotifierOptions) {
    this.log = options.log ?? (() => undefined);
  }

  /** Starts the deliveries `change` makes, if any (never throws, never waits). */
  notice(change: CommittedChange): void {
    const targets = this.options.webhooks?.targets;
    if (!targets || this.stopping.signal.aborted) return;
    const notification = notificationOf(change);
    if (!notification) return;
    for (const target of targets) {
      if (target.tenant !== notification.tenant) continue;
      const delivery = this.deliver(target, notification)
        .catch(() => {
          // Nothing above throws by design; should it, the delivery ends here and the fold goes on.
          this.failed += 1;
          this.log('warn', 'reviewer webhook delivery failed', { code: 'WEBHOOK.UNRECORDED', target: target.id, approvalId: notification.approvalId, kind: notification.kind });
        })
        .finally(() => this.running.delete(delivery));
      this.running.add(delivery);
    }
  }

  counts(): WebhookCounts {
    return { sent: this.sent, failed: this.failed, pending: this.running.size };
  }

  /** Cuts off waits and attempts; each delivery under way is recorded failed (`stopped`) before this resolves. */
  async stop(): Promise<void> {
    this.stopping.abort();
    await Promise.allSettled([...this.running]);
  }

  private async deliver(target: WebhookTarget, notification: ReviewerNotification): Promise<void> {
    const key: DeliveryKey = { approvalId: notification.approvalId, eventId: notification.eventId, target: target.id };
    const where = { target: target.id, approvalId: notification.approvalId, kind: notification.kind };
    const deliveries = this.options.deliveries;
    let claimed: boolean;
    try {
      claimed = await deliveries.claim(key, { kind: notification.kind, tenant: notification.tenant });
    } catch {
      // At most once: what cannot be claimed is not sent.
      this.failed += 1;
      this.log('warn', 'reviewer webhook not sent: its delivery could not be claimed', { code: 'WEBHOOK.UNRECORDED', ...where });
      return;
    }
    if (!claimed) return; // another replica, or this service before a restart, has it
    const ended = await this.attempt(target, notification, key);
    if (ended.delivered) this.sent += 1;
    else this.failed += 1;
    if (!ended.delivered) {
      const status = typeof ended.outcome === 'string' ? 0 : (ended.outcome.status ?? 0);
      this.log('warn', 'reviewer webhook not delivered', { code: 'WEBHOOK.NOT_DELIVERED', ...where, attempts: ended.attempts, why: ended.why, status });
    }
    await deliveries.attempted(key, ended.attempts, ended.outcome, ended.delivered ? 'sent' : 'failed').catch(() => {
      this.log('warn', 'reviewer webhook delivery could not be recorded', { code: 'WEBHOOK.UNRECORDED', ...where });
    });
  }

  /** The attempts of one claimed delivery, each recorded as it fails (best effort: the claim already holds). */
  private async attempt(target: WebhookTarget, notification: ReviewerNotification, key: DeliveryKey): Promise<Ended> {
    if (this.running.size > (this.options.maxInFlight ?? 1_000)) return { delivered: false, attempts: 0, outcome: 'overloaded', why: 'overloaded' };
    const deliveries = this.options.deliveries;
    const inboxUrl = (this.options.webhooks as ReviewerWebhooks).inboxUrl;
    const body = webhookBody(notification, target.format, inboxUrl);
    const result = await deliverWebhook(
      { url: target.url, secret: target.secret, body, eventType: `approval.${notification.kind}`, eventId: notification.eventId },
      {
        send: this.options.send ?? ((url, init) => fetch(url, init)),
        policy: this.options.retry ?? DEFAULT_RETRY,
        now: Date.now,
        random: Math.random,
        sleep: abortableSleep,
        signal: this.stopping.signal,
        // The attempt that ends the delivery is recorded with its end, by the caller.
        onAttempt: async (attempt, outcome) => {
          if (outcome.kind === 'retryable') await deliveries.attempted(key, attempt, outcome).catch(() => undefined);
        },
      },
    );
    const outcome: AttemptOutcome | DeliveryError = result.stopped || !result.last ? 'stopped' : result.last;
    const why = typeof outcome === 'string' ? outcome : outcome.kind === 'retryable' ? 'retries-exhausted' : outcome.kind;
    return { delivered: result.delivered, attempts: result.attempts, outcome, why };
  }
}

/** The notifier of the service's module: deliveries recorded in `schema`'s `webhook_deliveries`. */
export function reviewerNotifierProvider(webhooks: ReviewerWebhooks | undefined, schema: string) {
  return {
    provide: REVIEWER_NOTIFIER,
    inject: [DATA_SOURCE],
    useFactory: (dataSource: DataSource) => new ReviewerNotifier({ webhooks, deliveries: new PostgresDeliveryLog(dataSource, schema), log: nestFoldLog('approval-webhooks') }),
  };
}
