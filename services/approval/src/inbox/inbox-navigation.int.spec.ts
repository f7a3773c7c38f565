import { afterAll, afterEach, beforeAll, describe, expect, it } from '@jest/globals';
import { bearer, testReviewer } from '../testing/approval-app.js';
import { card, focused, historyEntry, type InboxHarness, recorded, shown, signedIn, startInboxHarness, text } from './testing/inbox-browser.js';

const alice = testReviewer('user:alice');
const bob = testReviewer('user:bob');

let harness: InboxHarness;
let app: InboxHarness['app'];

beforeAll(async () => {
  harness = await startInboxHarness('approval_inbox_navigation', [alice, bob]);
  app = harness.app;
});

afterEach(async () => {
  await harness.closePages();
  expect(harness.complaints.splice(0)).toEqual([]);
});

afterAll(async () => {
  await harness?.close();
});

describe('finding one’s way in the inbox, in headless Chromium', () => {
  it('filters both lists by tenant and connector, and keeps a live arrival outside the filter out', async () => {
    const acmeRefund = await harness.publish({ tenant: 'acme', arguments: { orderId: 'o-f1', amount: 5 } });
    const globexRefund = await harness.publish({ tenant: 'globex', arguments: { orderId: 'o-f2', amount: 6 } });
    const acmeMail = await harness.publish({ tenant: 'acme', connectorId: 'mail.send', arguments: { orderId: 'o-f3', amount: 7 } });
    const globexDecided = await harness.publish({ tenant: 'globex', arguments: { orderId: 'o-f4', amount: 8 } });
    expect((await app.post(`/v1/approvals/${globexDecided.approvalId}/decision`, { verdict: 'deny', comment: 'not this one' }, bearer(bob))).status).toBe(200);
    const page = await harness.openInbox();
    await signedIn(page, alice);
    await page.locator('[data-testid="live-status"][data-state="live"]').waitFor();
    await card(page, acmeMail.approvalId).waitFor();
    const suggested = await page.getByTestId('tenant-options').locator('option').evaluateAll((o) => o.map((n) => n.getAttribute('value')));
    expect(suggested).toEqual(expect.arrayContaining(['acme', 'globex']));

    await page.getByLabel('Tenant', { exact: true }).fill('globex');
    await page.getByTestId('filter-apply').click();
    await card(page, acmeRefund.approvalId).waitFor({ state: 'detached' });
    await card(page, globexRefund.approvalId).waitFor();
    await historyEntry(page, globexDecided.approvalId).waitFor();
    expect(new Set(await shown(page, 'tenant'))).toEqual(new Set(['globex']));
    expect(new Set(await page.getByTestId('history-tenant').allTextContents())).toEqual(new Set(['globex']));
    expect(await text(page.getByTestId('filter-state'))).toBe('Showing only tenant “globex”.');
    // A request of another tenant arriving now stays out; one of this tenant comes in.
    const lateAcme = await harness.publish({ tenant: 'acme', arguments: { orderId: 'o-f5', amount: 9 } });
    const lateGlobex = await harness.publish({ tenant: 'globex', arguments: { orderId: 'o-f6', amount: 9 } });
    await card(page, lateGlobex.approvalId).waitFor();
    expect(await card(page, lateAcme.approvalId).count()).toBe(0);

    await page.getByLabel('Tenant', { exact: true }).fill('acme');
    await page.getByLabel('Connector', { exact: true }).fill('mail.send');
    await page.getByTestId('filter-apply').click();
    await card(page, acmeMail.approvalId).waitFor();
    await card(page, globexRefund.approvalId).waitFor({ state: 'detached' });
    expect(new Set(await shown(page, 'connector'))).toEqual(new Set(['mail.send']));
    expect(await page.getByTestId('history-entry').count()).toBe(0);
    expect(await page.getByTestId('history-empty').isVisible()).toBe(true);

    await page.getByTestId('filter-clear').click();
    await card(page, lateAcme.approvalId).waitFor();
    await card(page, globexRefund.approvalId).waitFor();
    await historyEntry(page, globexDecided.approvalId).waitFor();
  });

  it('approves and denies the selected request from the keyboard, and never while the reviewer types', async () => {
    const older = await harness.publish({ arguments: { orderId: 'o-key-deny', amount: 11 } });
    const newer = await harness.publish({ arguments: { orderId: 'o-key-approve', amount: 12 } });
    const page = await harness.openInbox();
    await signedIn(page, alice);
    await card(page, older.approvalId).waitFor();
    expect(await text(page.getByTestId('shortcuts'))).toContain('approve the selected request');

    // Nothing selected yet: the key decides nothing.
    await page.keyboard.press('a');
    expect(await text(page.getByTestId('notice'))).toContain('Select a request first');
    // j selects the newest request; typing an "a" and a "d" into its comment decides nothing either.
    await page.keyboard.press('j');
    const first = card(page, newer.approvalId);
    expect(await focused(first.getByTestId('connector'))).toBe(true);
    await first.getByLabel('Comment (optional)').pressSequentially('a d');
    expect(await first.getByLabel('Comment (optional)').inputValue()).toBe('a d');
    expect(app.engine.approval(newer.approvalId)?.status).toBe('pending');
    // With the edit box open, "a" would drop the edits: it is refused.
    await first.getByTestId('connector').focus();
    await page.keyboard.press('e');
    await first.getByTestId('editor').waitFor({ state: 'visible' });
    await first.getByTestId('connector').focus();
    await page.keyboard.press('a');
    expect(await text(page.getByTestId('notice'))).toContain('being edited');
    expect(app.engine.approval(newer.approvalId)?.status).toBe('pending');
    await first.getByTestId('edit').click();

    await first.getByTestId('connector').focus();
    await page.keyboard.press('a');
    await first.waitFor({ state: 'detached' });
    expect(await recorded(page, newer.approvalId)).toBe('approved');
    expect(await text(historyEntry(page, newer.approvalId).getByTestId('history-comment'))).toBe('a d');
    // The focus moved to the next request, so the next key acts on it.
    const second = card(page, older.approvalId);
    expect(await focused(second.getByTestId('connector'))).toBe(true);
    await page.keyboard.press('d');
    await second.waitFor({ state: 'detached' });
    expect(await recorded(page, older.approvalId)).toBe('denied');
    expect(app.engine.approval(older.approvalId)).toMatchObject({ status: 'denied', reviewer: { id: 'user:alice' } });
  });

  it('selects the request a deep link names, and says when the linked one is already settled', async () => {
    const linked = await harness.publish({ arguments: { orderId: 'o-linked', amount: 13 } });
    await harness.publish({ arguments: { orderId: 'o-newer', amount: 14 } });
    const page = await harness.openInbox(`#approval=${linked.approvalId}`);
    await signedIn(page, alice);
    await card(page, linked.approvalId).locator('h3:focus').waitFor();
    expect(page.url()).not.toContain(alice.key);
    // The selected request is the one the keys act on.
    await page.keyboard.press('d');
    await card(page, linked.approvalId).waitFor({ state: 'detached' });
    expect(await recorded(page, linked.approvalId)).toBe('denied');

    // A link followed in the open tab changes only the fragment: no reload, the page reacts to it.
    await page.goto(`${app.baseUrl}/inbox#elsewhere`);
    await page.goto(`${app.baseUrl}/inbox#approval=${linked.approvalId}`);
    expect(await page.getByTestId('inbox').isVisible()).toBe(true);
    await page.getByTestId('notice').filter({ hasText: 'already settled' }).waitFor();
    expect(await text(page.getByTestId('notice'))).toContain('Denied by user:alice');
  });
});
