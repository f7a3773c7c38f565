import { describe, expect, it } from '@jest/globals';
import { applyApprovalEvent, createApprovalsState } from '@gatehouse/approvals';
import { testRequest } from '@gatehouse/approvals/testing';
import { TEST_KEYRING } from '@gatehouse/contracts/testing';
import { waitFor } from '@gatehouse/kafka/testing';
import { type CommittedChange } from '../engine/approval-engine.js';
import { type DeliveryError, type DeliveryKey, type DeliveryLog } from './delivery-log.js';
import { type AttemptOutcome, type RetryPolicy } from './retry-policy.js';
import { ReviewerNotifier } from './reviewer-notifier.js';
import { type ReviewerWebhooks, type WebhookTarget } from './webhook-config.js';

const fast: RetryPolicy = { maxAttempts: 3, baseDelayMs: 10, maxDelayMs: 20, totalMs: 1_000, timeoutMs: 1_000 };
const target = (id: string, tenant: string): WebhookTarget => ({ id, tenant, url: new URL(`https://hooks.example.com/${id}`), format: 'json', secret: Buffer.from('s'.repeat(32)) });
const webhooks: ReviewerWebhooks = { targets: [target('acme-a', 'acme'), target('acme-b', 'acme'), target('globex', 'globex')], inboxUrl: 'https://approvals.example.com' };

/** The delivery table in memory: the same claim rule (one row per key), shared by every notifier given it. */
class MemoryDeliveryLog implements DeliveryLog {
  readonly rows = new Map<string, { status: string; attempts: number; last?: AttemptOutcome | DeliveryError }>();
  failClaims = false;

  async claim(key: DeliveryKey): Promise<boolean> {
    if (this.failClaims) throw new Error('database down');
    const id = `${key.approvalId}/${key.eventId}/${key.target}`;
    if (this.rows.has(id)) return false;
    this.rows.set(id, { status: 'sending', attempts: 0 });
    return true;
  }

  async attempted(key: DeliveryKey, attempts: number, outcome: AttemptOutcome | DeliveryError, done?: 'sent' | 'failed'): Promise<void> {
    const row = this.rows.get(`${key.approvalId}/${key.eventId}/${key.target}`);
    if (row?.status === 'sending') Object.assign(row, { attempts, last: outcome, ...(done && { status: done }) });
  }
}

function requested(): CommittedChange {
  const state = createApprovalsState(TEST_KEYRING);
  const { event, approvalId } = testRequest();
  const verdict = applyApprovalEvent(state, event, Date.now());
  const approval = state.approvals.get(approvalId);
  if (!approval) throw new Error('not requested');
  return { record: { topic: 'gatehouse.approvals.v1', partition: 0, offset: '0', logTime: new Date(), key: approvalId, event }, verdict, approval };
}

function receiver(answers: number[] = []) {
  const calls: string[] = [];
  const send = async (url: URL) => {
    calls.push(url.pathname.slice(1));
    return new Response(null, { status: answers.shift() ?? 200 });
  };
  return { calls, send };
}

const settled = (notifier: ReviewerNotifier) => waitFor(async () => (notifier.counts().pending === 0 ? true : undefined), { what: 'the deliveries ended', timeoutMs: 5_000 });

describe('the reviewer notifier', () => {
  it("sends to every target of the event's tenant and to no other tenant's, and records each delivery sent", async () => {
    const log = new MemoryDeliveryLog();
    const { calls, send } = receiver();
    const notifier = new ReviewerNotifier({ webhooks, deliveries: log, send, retry: fast });
    notifier.notice(requested());
    await settled(notifier);
    expect(calls.sort()).toEqual(['acme-a', 'acme-b']);
    expect([...log.rows.values()].map((r) => [r.status, r.attempts])).toEqual([['sent', 1], ['sent', 1]]);
    expect(notifier.counts()).toEqual({ sent: 2, failed: 0, pending: 0 });
  });

  it('delivers an event once when two replicas (or a restarted one) are told of it', async () => {
    const log = new MemoryDeliveryLog();
    const { calls, send } = receiver();
    const change = requested();
    const first = new ReviewerNotifier({ webhooks, deliveries: log, send, retry: fast });
    const second = new ReviewerNotifier({ webhooks, deliveries: log, send, retry: fast });
    first.notice(change);
    second.notice(change);
    first.notice(change);
    await Promise.all([settled(first), settled(second)]);
    expect(calls.sort()).toEqual(['acme-a', 'acme-b']);
  });

  it('records each failed attempt and the end: retried 503s, then given up', async () => {
    const log = new MemoryDeliveryLog();
    const { calls, send } = receiver([503, 503, 503, 503, 503, 503]);
    const notifier = new ReviewerNotifier({ webhooks: { ...webhooks, targets: [target('acme-a', 'acme')] }, deliveries: log, send, retry: fast });
    notifier.notice(requested());
    await settled(notifier);
    expect(calls).toEqual(['acme-a', 'acme-a', 'acme-a']);
    expect([...log.rows.values()]).toEqual([{ status: 'failed', attempts: 3, last: { kind: 'retryable', status: 503 } }]);
    expect(notifier.counts()).toEqual({ sent: 0, failed: 1, pending: 0 });
  });

  it('sends nothing when the delivery cannot be claimed (at most once: unrecorded means unsent)', async () => {
    const log = new MemoryDeliveryLog();
    log.failClaims = true;
    const { calls, send } = receiver();
    const notifier = new ReviewerNotifier({ webhooks, deliveries: log, send, retry: fast });
    notifier.notice(requested());
    await settled(notifier);
    expect(calls).toEqual([]);
    expect(notifier.counts()).toEqual({ sent: 0, failed: 2, pending: 0 });
  });

  it('on stop, ends a delivery waiting to retry and records it failed as stopped', async () => {
    const log = new MemoryDeliveryLog();
    const { calls, send } = receiver([503]);
    const slow: RetryPolicy = { ...fast, baseDelayMs: 60_000, maxDelayMs: 60_000, totalMs: 600_000 };
    const notifier = new ReviewerNotifier({ webhooks: { ...webhooks, targets: [target('acme-a', 'acme')] }, deliveries: log, send, retry: slow });
    notifier.notice(requested());
    await waitFor(async () => (calls.length === 1 ? true : undefined), { what: 'the first attempt' });
    await notifier.stop();
    expect([...log.rows.values()]).toEqual([{ status: 'failed', attempts: 1, last: 'stopped' }]);
    notifier.notice(requested());
    expect(notifier.counts()).toEqual({ sent: 0, failed: 1, pending: 0 });
  });

  it('without webhooks configured, does nothing', () => {
    const log = new MemoryDeliveryLog();
    const notifier = new ReviewerNotifier({ webhooks: undefined, deliveries: log });
    notifier.notice(requested());
    expect(log.rows.size).toBe(0);
  });
});
