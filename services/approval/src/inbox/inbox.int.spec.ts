import { afterAll, afterEach, beforeAll, describe, expect, it } from '@jest/globals';
import { mkdirSync } from 'node:fs';
import path from 'node:path';
import { TEST_AGENT_KEY, TEST_KEYS, testAgentKey, testKeyring } from '@gatehouse/contracts/testing';
import { bearer, testReviewer } from '../testing/approval-app.js';
import { type TestRequestOptions } from '../testing/requests.js';
import { card, historyEntry, type InboxHarness, json, recorded, reviewedChanges, signedIn as signedInAs, signIn, startInboxHarness, text } from './testing/inbox-browser.js';

const REPO_ROOT = path.resolve(import.meta.dirname, '../../../..');
const SCREENSHOT = path.join(REPO_ROOT, '.artifacts', 'inbox', 'inbox.png');
const CSP = "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; img-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'";
const HOSTILE = '<img src=x onerror="window.__pwned=1">';
const HOSTILE_AGENT = testAgentKey(`agent:${HOSTILE}`, ['acme']);

const alice = testReviewer('user:alice');
const bob = testReviewer('user:bob');

let harness: InboxHarness;
let app: InboxHarness['app'];

beforeAll(async () => {
  harness = await startInboxHarness('approval_inbox', [alice, bob], testKeyring(TEST_KEYS.approval, TEST_AGENT_KEY, HOSTILE_AGENT));
  app = harness.app;
});

afterEach(async () => {
  await harness.closePages();
  expect(harness.complaints.splice(0)).toEqual([]);
});

afterAll(async () => {
  await harness?.close();
});

const openInbox = () => harness.openInbox();
const signedIn = (page: Parameters<typeof signedInAs>[0]) => signedInAs(page, alice);
const publish = (options: TestRequestOptions = {}, reason?: string) => harness.publish({ ...options, ...(reason !== undefined && { reason }) });

describe('reviewers’ web inbox in headless Chromium', () => {
  it('serves the page and its built assets under a strict content security policy, and nothing else under /inbox', async () => {
    for (const [route, type] of [
      ['/inbox', 'text/html'],
      ['/inbox/app.js', 'text/javascript'],
      ['/inbox/diff.js', 'text/javascript'],
      ['/inbox/app.css', 'text/css'],
    ] as const) {
      const answer = await app.get(route);
      expect([route, answer.status]).toEqual([route, 200]);
      expect(answer.headers.get('content-type')).toContain(type);
      expect(answer.headers.get('content-security-policy')).toBe(CSP);
      expect(answer.headers.get('x-content-type-options')).toBe('nosniff');
      expect(answer.headers.get('referrer-policy')).toBe('no-referrer');
      expect(answer.headers.get('cache-control')).toBe('no-store');
    }
    // Only the build's own scripts and style sheet: no source, no page copy, no other path.
    for (const route of ['/inbox/app.ts', '/inbox/inbox.html', '/inbox/nope.js', '/inbox/..%2F..%2Fpackage.json', '/inbox/%2e%2e%2fmain.js', '/inbox/assets/app.js']) {
      expect([route, (await app.get(route)).status]).toEqual([route, 404]);
    }
    const openapi = await app.get<{ paths: Record<string, unknown> }>('/openapi.json');
    expect(Object.keys(openapi.body.paths)).toEqual(expect.arrayContaining(['/inbox', '/inbox/{asset}']));
    // The page's own data calls still need a credential.
    expect((await app.get('/v1/approvals')).status).toBe(401);
  });

  it('refuses a wrong key with a sign-in error and keeps nothing', async () => {
    const page = await openInbox();
    await signIn(page, 'rk_not-a-key-anyone-was-given');
    const error = page.getByTestId('sign-in-error');
    await error.waitFor({ state: 'visible' });
    expect(await text(error)).toContain('not accepted');
    expect(await page.getByTestId('inbox').isHidden()).toBe(true);
    expect(await page.evaluate(() => sessionStorage.length)).toBe(0);
  });

  it('lets a reviewer approve one request, deny one, and approve one with edits after reviewing their diff', async () => {
    const earlier = await publish({ arguments: { orderId: 'o-earlier', amount: 15 } });
    expect((await app.post(`/v1/approvals/${earlier.approvalId}/decision`, { verdict: 'approve', comment: 'verified the order' }, bearer(bob))).status).toBe(200);
    const refund = await publish({
      arguments: { orderId: 'o-approve', amount: 42 },
      toolDescription: 'Refunds an order to the card it was paid with',
      dryRunPreview: { wouldRefund: { amount: 42, currency: 'EUR' }, customerNotified: true },
    });
    const denied = await publish({ arguments: { orderId: 'o-deny', amount: 480 } });
    const edited = await publish({ arguments: { orderId: 'o-edit', amount: 300 }, toolDescription: 'Refunds an order', dryRunPreview: { wouldRefund: { amount: 300 } } });

    const page = await openInbox();
    await signedIn(page);
    await card(page, edited.approvalId).waitFor({ state: 'visible' });
    expect(await page.evaluate(() => sessionStorage.length)).toBe(1);
    const order = await page.getByTestId('approval').evaluateAll((nodes) => nodes.map((n) => n.getAttribute('data-approval-id')));
    expect(order.filter((id) => [refund, denied, edited].some((r) => r.approvalId === id))).toEqual([edited.approvalId, denied.approvalId, refund.approvalId]);
    // The history holds bob's decision, read from the service: who, when, and the comment.
    expect(await recorded(page, earlier.approvalId)).toBe('approved');
    const bobs = historyEntry(page, earlier.approvalId);
    const settledAt = (await app.get<{ settledAt: string }>(`/v1/approvals/${earlier.approvalId}`, bearer(alice))).body.settledAt;
    expect([await text(bobs.getByTestId('history-reviewer')), await text(bobs.getByTestId('history-comment'))]).toEqual(['user:bob', 'verified the order']);
    expect(await bobs.locator('[data-testid="history-at"] time').getAttribute('datetime')).toBe(settledAt);

    const first = card(page, refund.approvalId);
    expect(await text(first.getByTestId('connector'))).toBe('payments.refund');
    expect(await text(first.getByTestId('tool-description'))).toBe('Refunds an order to the card it was paid with');
    expect(await text(first.getByTestId('tenant'))).toBe('acme');
    expect(await text(first.getByTestId('requester'))).toBe('agent:billing (agent, agent)');
    expect(await text(first.getByTestId('reason'))).toBe('refunds need a person');
    expect(await first.locator('[data-testid="deadline"] time').getAttribute('datetime')).toBe(refund.event.payload.deadline);
    expect(await json(first.getByTestId('arguments'))).toEqual({ orderId: 'o-approve', amount: 42 });
    expect(await json(first.getByTestId('dry-run-preview'))).toEqual({ wouldRefund: { amount: 42, currency: 'EUR' }, customerNotified: true });
    expect(await card(page, denied.approvalId).getByTestId('dry-run-preview').count()).toBe(0);

    await first.getByLabel('Comment (optional)').fill('confirmed with the customer');
    await first.getByTestId('approve').click();
    await first.waitFor({ state: 'detached' });
    expect(await recorded(page, refund.approvalId)).toBe('approved');
    expect(await text(page.getByTestId('notice'))).toContain('Approved: payments.refund');
    expect(await text(historyEntry(page, refund.approvalId).getByTestId('history-comment'))).toBe('confirmed with the customer');

    await card(page, denied.approvalId).getByTestId('deny').click();
    await card(page, denied.approvalId).waitFor({ state: 'detached' });
    expect(await recorded(page, denied.approvalId)).toBe('denied');

    const third = card(page, edited.approvalId);
    await third.getByTestId('edit').click();
    const box = third.getByLabel('Edited arguments (JSON)');
    const review = third.getByTestId('edit-review');
    expect(JSON.parse(await box.inputValue())).toEqual({ orderId: 'o-edit', amount: 300 });
    // Unchanged, then not JSON: the page refuses both and sends nothing.
    await third.getByTestId('approve-with-edits').click();
    expect(await text(third.getByTestId('edit-problems'))).toContain('equal the original');
    await box.fill('{ "orderId": "o-edit", "amount": ');
    await third.getByTestId('approve-with-edits').click();
    expect(await text(third.getByTestId('edit-problems'))).toContain('not valid JSON');
    expect(await review.isHidden()).toBe(true);
    expect(app.engine.approval(edited.approvalId)?.status).toBe('pending');
    // Over the schema's maximum and with a stray field: the review shows both changes, the service's 422 lists both problems.
    await box.fill(JSON.stringify({ orderId: 'o-edit', amount: 9000, note: 'rush' }));
    await third.getByTestId('approve-with-edits').click();
    await review.waitFor({ state: 'visible' });
    expect(await reviewedChanges(third)).toEqual([
      ['/amount', '300', '9000', 'changed'],
      ['/note', '—', '"rush"', 'added'],
    ]);
    await third.getByTestId('confirm-edits').click();
    const problems = third.getByTestId('edit-problem');
    await problems.filter({ hasText: 'maximum' }).waitFor({ state: 'visible' });
    const listed = await problems.allTextContents();
    expect(listed).toHaveLength(2);
    expect(listed.some((p) => p.startsWith('/amount maximum:'))).toBe(true);
    expect(listed.some((p) => p.startsWith('/ additionalProperties:'))).toBe(true);
    expect(await review.isHidden()).toBe(true);

    await box.fill(JSON.stringify({ orderId: 'o-edit', amount: 250 }, null, 2));
    await third.getByLabel('Comment (optional)').fill('partial refund');
    await third.getByTestId('approve-with-edits').click();
    await review.waitFor({ state: 'visible' });
    expect(await text(review.getByTestId('change-count'))).toBe('1 change to the arguments');
    expect(await reviewedChanges(third)).toEqual([['/amount', '300', '250', 'changed']]);
    expect(await text(review)).toContain('dry-run preview above was made for the original arguments');
    mkdirSync(path.dirname(SCREENSHOT), { recursive: true });
    await page.screenshot({ path: SCREENSHOT, fullPage: true });
    // A keystroke after the review closes it: what is confirmed is always what was reviewed.
    await box.press('End');
    await box.press('Space');
    expect(await review.isHidden()).toBe(true);
    await third.getByTestId('approve-with-edits').click();
    await third.getByTestId('confirm-edits').click();
    await third.waitFor({ state: 'detached' });
    expect(await recorded(page, edited.approvalId)).toBe('approved-with-edits');
    expect(await reviewedChanges(historyEntry(page, edited.approvalId))).toEqual([['/amount', '300', '250', 'changed']]);

    // What the page showed is what the service recorded.
    const views = await Promise.all([refund, denied, edited].map((r) => app.get(`/v1/approvals/${r.approvalId}`, bearer(bob))));
    expect(views.map((v) => v.body)).toEqual([
      expect.objectContaining({ status: 'approved', settledBy: { id: 'user:alice', role: 'approver', kind: 'human' }, comment: 'confirmed with the customer' }),
      expect.objectContaining({ status: 'denied', settledBy: expect.objectContaining({ id: 'user:alice' }) }),
      expect.objectContaining({ status: 'approved-with-edits', editedArguments: { orderId: 'o-edit', amount: 250 }, comment: 'partial refund' }),
    ]);
    expect(app.engine.approval(edited.approvalId)).toMatchObject({ status: 'approved-with-edits', editedArguments: { orderId: 'o-edit', amount: 250 }, reviewer: { id: 'user:alice' } });
    expect(app.engine.approval(denied.approvalId)).toMatchObject({ status: 'denied', reviewer: { id: 'user:alice' } });

    await page.getByTestId('sign-out').click();
    await page.getByTestId('sign-in').waitFor({ state: 'visible' });
    expect(await page.evaluate(() => sessionStorage.length)).toBe(0);
    expect(await page.getByTestId('approval').count()).toBe(0);
    expect(await page.getByTestId('history-entry').count()).toBe(0);
  });

  it('shows a request published while the page is open, and drops it when settled elsewhere, without reload', async () => {
    const page = await openInbox();
    await signedIn(page);
    await page.locator('[data-testid="live-status"][data-state="live"]').waitFor();
    expect(await text(page.getByTestId('reviewer'))).toBe('Signed in as user:alice');

    const arriving = await publish({ arguments: { orderId: 'o-live', amount: 7 }, toolDescription: 'Refunds an order' });
    const live = card(page, arriving.approvalId);
    await live.waitFor({ state: 'visible' });
    expect(await json(live.getByTestId('arguments'))).toEqual({ orderId: 'o-live', amount: 7 });

    const elsewhere = await app.post(`/v1/approvals/${arriving.approvalId}/decision`, { verdict: 'deny', comment: 'the customer withdrew' }, bearer(bob));
    expect(elsewhere.status).toBe(200);
    await live.waitFor({ state: 'detached' });
    expect(await text(page.getByTestId('notice'))).toContain('settled elsewhere: Denied');
    // The history lists bob's decision as soon as the stream announced it: who, when, and why.
    expect(await recorded(page, arriving.approvalId)).toBe('denied');
    const entry = historyEntry(page, arriving.approvalId);
    expect(await text(entry.getByTestId('history-reviewer'))).toBe('user:bob');
    expect(await text(entry.getByTestId('history-comment'))).toBe('the customer withdrew');
    expect(await entry.locator('[data-testid="history-at"] time').getAttribute('datetime')).toBe((elsewhere.body as { decidedAt: string }).decidedAt);
    // Newest decision first.
    expect(await page.getByTestId('history-entry').first().getAttribute('data-approval-id')).toBe(arriving.approvalId);
  });

  it('answers a decision that lost the race with the reason, and refreshes the list', async () => {
    const page = await openInbox();
    // Without the live stream the page cannot learn of bob's decision before alice clicks.
    await page.route('**/v1/approval-events', (route) => route.abort());
    const raced = await publish({ arguments: { orderId: 'o-race', amount: 12 } });
    await signedIn(page);
    const stale = card(page, raced.approvalId);
    await stale.waitFor({ state: 'visible' });
    expect((await app.post(`/v1/approvals/${raced.approvalId}/decision`, { verdict: 'deny', comment: 'duplicate' }, bearer(bob))).status).toBe(200);

    await stale.getByTestId('approve').click();
    await stale.waitFor({ state: 'detached' });
    const notice = await text(page.getByTestId('notice'));
    expect(notice).toContain('another decision came first');
    expect(notice).toContain('409 APPROVAL.ALREADY_DECIDED');
    expect(app.engine.approval(raced.approvalId)).toMatchObject({ status: 'denied', reviewer: { id: 'user:bob' } });
  });

  it('renders hostile request content as text and never runs it', async () => {
    const hostile = await publish(
      {
        arguments: { orderId: HOSTILE, amount: 5 },
        toolDescription: `${HOSTILE} Refunds an order`,
        dryRunPreview: { note: HOSTILE },
        // Signed by an agent whose id is itself hostile: the claim is attributed, its content still only text.
        agentKey: HOSTILE_AGENT,
      },
      HOSTILE,
    );
    // Decided by another reviewer with a hostile comment, on a connector whose name is hostile: the history shows both as text.
    const settled = await publish({ connectorId: HOSTILE, agentKey: HOSTILE_AGENT });
    expect((await app.post(`/v1/approvals/${settled.approvalId}/decision`, { verdict: 'deny', comment: HOSTILE }, bearer(bob))).status).toBe(200);
    const page = await openInbox();
    await signedIn(page);
    const shown = card(page, hostile.approvalId);
    await shown.waitFor({ state: 'visible' });

    expect(await text(shown.getByTestId('reason'))).toBe(HOSTILE);
    expect(await text(shown.getByTestId('tool-description'))).toBe(`${HOSTILE} Refunds an order`);
    expect(await text(shown.getByTestId('requester'))).toBe(`agent:${HOSTILE} (agent, agent)`);
    expect(await json(shown.getByTestId('arguments'))).toEqual({ orderId: HOSTILE, amount: 5 });
    expect(await json(shown.getByTestId('dry-run-preview'))).toEqual({ note: HOSTILE });
    await shown.getByTestId('edit').click();
    const box = shown.getByLabel('Edited arguments (JSON)');
    expect(JSON.parse(await box.inputValue())).toEqual({ orderId: HOSTILE, amount: 5 });
    await box.fill(JSON.stringify({ orderId: 'o-clean', amount: 5, [HOSTILE]: HOSTILE }));
    await shown.getByTestId('approve-with-edits').click();
    expect(await reviewedChanges(shown)).toEqual([
      ['/orderId', JSON.stringify(HOSTILE), '"o-clean"', 'changed'],
      [`/${HOSTILE}`, '—', JSON.stringify(HOSTILE), 'added'],
    ]);
    const entry = historyEntry(page, settled.approvalId);
    await entry.waitFor({ state: 'visible' });
    expect([await text(entry.getByTestId('history-connector')), await text(entry.getByTestId('history-comment'))]).toEqual([HOSTILE, HOSTILE]);
    expect(await page.getByTestId('connector-options').locator('option').evaluateAll((o) => o.map((n) => n.getAttribute('value')))).toContain(HOSTILE);
    // The policy would block the handler anyway; no <img> element proves the markup was never parsed.
    expect(await page.locator('img').count()).toBe(0);
    expect(await page.evaluate(() => (globalThis as { __pwned?: unknown }).__pwned)).toBeUndefined();
  });
});
