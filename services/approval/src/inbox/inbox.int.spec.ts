import { afterAll, afterEach, beforeAll, describe, expect, it } from '@jest/globals';
import { mkdirSync } from 'node:fs';
import path from 'node:path';
import { type JsonValue } from '@gatehouse/contracts';
import { TEST_AGENT_KEY, TEST_KEYS, testAgentKey, testKeyring } from '@gatehouse/contracts/testing';
import { EventProducer } from '@gatehouse/kafka';
import { provisionedNamespace, testKafka, waitFor } from '@gatehouse/kafka/testing';
import { createTestDatabase, type TestDatabase } from '@gatehouse/service-runtime/testing';
import { type Browser, type BrowserContext, chromium, type Locator, type Page } from 'playwright-core';
import { type ApprovalApp, bearer, startApprovalApp, testReviewer } from '../testing/approval-app.js';
import { testRequest, type TestRequestOptions } from '../testing/requests.js';

// The Debian `chromium` package (infra/scripts/test.sh installs it); never a downloaded browser.
const CHROMIUM = process.env['GATEHOUSE_CHROMIUM'] ?? '/usr/bin/chromium';
const REPO_ROOT = path.resolve(import.meta.dirname, '../../../..');
const SCREENSHOT = path.join(REPO_ROOT, '.artifacts', 'inbox', 'inbox.png');
const CSP = "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; img-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'";
const HOSTILE = '<img src=x onerror="window.__pwned=1">';
const HOSTILE_AGENT = testAgentKey(`agent:${HOSTILE}`, ['acme']);
const STEP_MS = 10_000;

const alice = testReviewer('user:alice');
const bob = testReviewer('user:bob');

let database: TestDatabase;
let producer: EventProducer;
let app: ApprovalApp;
let browser: Browser;
const contexts: BrowserContext[] = [];
/** What each page reported that it should not have: script errors, policy violations. */
const complaints: string[] = [];

beforeAll(async () => {
  const kafka = testKafka('approval-inbox-int-spec');
  database = await createTestDatabase();
  const namespace = await provisionedNamespace(kafka);
  producer = await EventProducer.connect(kafka, { namespace });
  app = await startApprovalApp({ namespace, schema: 'approval_inbox', databaseUrl: database.url, reviewers: [alice, bob], keyring: testKeyring(TEST_KEYS.approval, TEST_AGENT_KEY, HOSTILE_AGENT) });
  browser = await chromium.launch({ executablePath: CHROMIUM, headless: true, args: ['--no-sandbox'] });
});

afterEach(async () => {
  // Closing the pages ends their event streams, so the app can close afterwards.
  await Promise.all(contexts.splice(0).map((c) => c.close()));
  expect(complaints.splice(0)).toEqual([]);
});

afterAll(async () => {
  await browser?.close();
  await app?.close();
  await producer?.close();
  await database?.drop();
});

async function openInbox(): Promise<Page> {
  const context = await browser.newContext();
  contexts.push(context);
  const page = await context.newPage();
  page.setDefaultTimeout(STEP_MS);
  page.on('pageerror', (error) => complaints.push(`page error: ${error.message}`));
  page.on('console', (message) => {
    if (message.type() === 'error' && /Content Security Policy|Refused to/i.test(message.text())) complaints.push(`policy: ${message.text()}`);
  });
  await page.goto(`${app.baseUrl}/inbox`);
  return page;
}

async function signIn(page: Page, key: string): Promise<void> {
  await page.getByLabel('Reviewer API key').fill(key);
  await page.getByTestId('sign-in-submit').click();
}

async function signedIn(page: Page): Promise<void> {
  await signIn(page, alice.key);
  await page.getByTestId('inbox').waitFor({ state: 'visible' });
}

/** Appends a request as a guard would and waits until the service lists it. */
async function publish(options: TestRequestOptions = {}, reason?: string) {
  const made = testRequest({ ...options, ...(reason !== undefined && { reason }) });
  await producer.publish('approvals', made.event);
  await waitFor(async () => ((await app.get(`/v1/approvals/${made.approvalId}`, bearer(alice))).status === 200 ? true : undefined), {
    what: 'the request projected',
    timeoutMs: STEP_MS,
  });
  return made;
}

const card = (page: Page, approvalId: string): Locator => page.locator(`[data-testid="approval"][data-approval-id="${approvalId}"]`);
const text = async (locator: Locator) => (await locator.textContent()) ?? '';
const json = async (locator: Locator): Promise<JsonValue> => JSON.parse(await text(locator)) as JsonValue;

async function decision(page: Page, approvalId: string): Promise<string | null> {
  const item = page.locator(`[data-testid="decision"][data-approval-id="${approvalId}"]`);
  await item.waitFor({ state: 'visible' });
  return item.getAttribute('data-status');
}

describe('reviewers’ web inbox in headless Chromium', () => {
  it('serves the page and its assets under a strict content security policy', async () => {
    for (const [route, type] of [
      ['/inbox', 'text/html'],
      ['/inbox/app.js', 'text/javascript'],
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
    const openapi = await app.get<{ paths: Record<string, unknown> }>('/openapi.json');
    expect(Object.keys(openapi.body.paths)).toContain('/inbox');
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

  it('lets a reviewer approve one request, deny one, and approve one with an edited amount', async () => {
    const refund = await publish({
      arguments: { orderId: 'o-approve', amount: 42 },
      toolDescription: 'Refunds an order to the card it was paid with',
      dryRunPreview: { wouldRefund: { amount: 42, currency: 'EUR' }, customerNotified: true },
    });
    const denied = await publish({ arguments: { orderId: 'o-deny', amount: 480 } });
    const edited = await publish({ arguments: { orderId: 'o-edit', amount: 300 }, toolDescription: 'Refunds an order' });

    const page = await openInbox();
    await signedIn(page);
    await card(page, edited.approvalId).waitFor({ state: 'visible' });
    expect(await page.evaluate(() => sessionStorage.length)).toBe(1);
    const order = await page.getByTestId('approval').evaluateAll((nodes) => nodes.map((n) => n.getAttribute('data-approval-id')));
    expect(order.filter((id) => [refund, denied, edited].some((r) => r.approvalId === id))).toEqual([edited.approvalId, denied.approvalId, refund.approvalId]);

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
    expect(await decision(page, refund.approvalId)).toBe('approved');
    expect(await text(page.getByTestId('notice'))).toContain('Approved: payments.refund');

    await card(page, denied.approvalId).getByTestId('deny').click();
    await card(page, denied.approvalId).waitFor({ state: 'detached' });
    expect(await decision(page, denied.approvalId)).toBe('denied');

    const third = card(page, edited.approvalId);
    await third.getByTestId('edit').click();
    const box = third.getByLabel('Edited arguments (JSON)');
    expect(JSON.parse(await box.inputValue())).toEqual({ orderId: 'o-edit', amount: 300 });
    // Not JSON: the page refuses it and sends nothing.
    await box.fill('{ "orderId": "o-edit", "amount": ');
    await third.getByTestId('approve-with-edits').click();
    expect(await text(third.getByTestId('edit-problems'))).toContain('not valid JSON');
    expect(app.engine.approval(edited.approvalId)?.status).toBe('pending');
    // Over the schema's maximum and with a stray field: the service's 422 lists every problem.
    await box.fill(JSON.stringify({ orderId: 'o-edit', amount: 9000, note: 'rush' }));
    await third.getByTestId('approve-with-edits').click();
    const problems = third.getByTestId('edit-problem');
    await problems.filter({ hasText: 'maximum' }).waitFor({ state: 'visible' });
    const listed = await problems.allTextContents();
    expect(listed).toHaveLength(2);
    expect(listed.some((p) => p.startsWith('/amount maximum:'))).toBe(true);
    expect(listed.some((p) => p.startsWith('/ additionalProperties:'))).toBe(true);
    mkdirSync(path.dirname(SCREENSHOT), { recursive: true });
    await page.screenshot({ path: SCREENSHOT, fullPage: true });

    await box.fill(JSON.stringify({ orderId: 'o-edit', amount: 250 }, null, 2));
    await third.getByLabel('Comment (optional)').fill('partial refund');
    await third.getByTestId('approve-with-edits').click();
    await third.waitFor({ state: 'detached' });
    expect(await decision(page, edited.approvalId)).toBe('approved-with-edits');

    // What the page showed is what the service recorded.
    const views = await Promise.all([refund, denied, edited].map((r) => app.get(`/v1/approvals/${r.approvalId}`, bearer(bob))));
    expect(views.map((v) => v.body)).toEqual([
      expect.objectContaining({ status: 'approved', settledBy: { id: 'user:alice', role: 'approver', kind: 'human' }, comment: 'confirmed with the customer' }),
      expect.objectContaining({ status: 'denied', settledBy: expect.objectContaining({ id: 'user:alice' }) }),
      expect.objectContaining({ status: 'approved-with-edits', editedArguments: { orderId: 'o-edit', amount: 250 }, comment: 'partial refund' }),
    ]);
    expect(app.engine.approval(edited.approvalId)).toMatchObject({
      status: 'approved-with-edits',
      editedArguments: { orderId: 'o-edit', amount: 250 },
      reviewer: { id: 'user:alice' },
    });
    expect(app.engine.approval(denied.approvalId)).toMatchObject({ status: 'denied', reviewer: { id: 'user:alice' } });

    await page.getByTestId('sign-out').click();
    await page.getByTestId('sign-in').waitFor({ state: 'visible' });
    expect(await page.evaluate(() => sessionStorage.length)).toBe(0);
    expect(await page.getByTestId('approval').count()).toBe(0);
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

    const elsewhere = await app.post(`/v1/approvals/${arriving.approvalId}/decision`, { verdict: 'deny' }, bearer(bob));
    expect(elsewhere.status).toBe(200);
    await live.waitFor({ state: 'detached' });
    expect(await text(page.getByTestId('notice'))).toContain('settled elsewhere: Denied');
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
        // Signed by an agent whose id is itself hostile: the claim is attributed, its content still only text.
        agentKey: HOSTILE_AGENT,
      },
      HOSTILE,
    );
    const page = await openInbox();
    await signedIn(page);
    const shown = card(page, hostile.approvalId);
    await shown.waitFor({ state: 'visible' });

    expect(await text(shown.getByTestId('reason'))).toBe(HOSTILE);
    expect(await text(shown.getByTestId('tool-description'))).toBe(`${HOSTILE} Refunds an order`);
    expect(await text(shown.getByTestId('requester'))).toBe(`agent:${HOSTILE} (agent, agent)`);
    expect(await json(shown.getByTestId('arguments'))).toEqual({ orderId: HOSTILE, amount: 5 });
    await shown.getByTestId('edit').click();
    expect(JSON.parse(await shown.getByLabel('Edited arguments (JSON)').inputValue())).toEqual({ orderId: HOSTILE, amount: 5 });
    // The policy would block the handler anyway; no <img> element proves the markup was never parsed.
    expect(await page.locator('img').count()).toBe(0);
    expect(await page.evaluate(() => (globalThis as { __pwned?: unknown }).__pwned)).toBeUndefined();
  });
});
