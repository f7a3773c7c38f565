import { type JsonValue, type Keyring } from '@gatehouse/contracts';
import { EventProducer } from '@gatehouse/kafka';
import { provisionedNamespace, testKafka, waitFor } from '@gatehouse/kafka/testing';
import { createTestDatabase } from '@gatehouse/service-runtime/testing';
import { type Browser, type BrowserContext, chromium, type Locator, type Page } from 'playwright-core';
import { type ApprovalApp, bearer, startApprovalApp, type TestReviewer } from '../../testing/approval-app.js';
import { testRequest, type TestRequestOptions } from '../../testing/requests.js';

// The Debian `chromium` package (infra/scripts/test.sh installs it); never a downloaded browser.
const CHROMIUM = process.env['GATEHOUSE_CHROMIUM'] ?? '/usr/bin/chromium';
/** How long one step in the page may take. */
export const STEP_MS = 10_000;

/** A real approval service, broker and database, and headless Chromium to open its inbox in. */
export interface InboxHarness {
  readonly app: ApprovalApp;
  readonly producer: EventProducer;
  /** What a page reported that it should not have: script errors, policy violations. */
  readonly complaints: string[];
  /** A fresh browser context on `/inbox` (plus `hash`, e.g. a deep link). */
  openInbox(hash?: string): Promise<Page>;
  /** Appends a request as a guard would, and waits until the service lists it to `reader`. */
  publish(options?: TestRequestOptions): Promise<ReturnType<typeof testRequest>>;
  /** Closes the pages opened (ending their event streams, so the app can close). */
  closePages(): Promise<void>;
  close(): Promise<void>;
}

/** Starts the service (schema `schema`, `reviewers`) and the browser; `reader` is who `publish` waits for. */
export async function startInboxHarness(schema: string, reviewers: readonly TestReviewer[], keyring?: Keyring): Promise<InboxHarness> {
  const kafka = testKafka(`approval-${schema}`);
  const database = await createTestDatabase();
  const namespace = await provisionedNamespace(kafka);
  const producer = await EventProducer.connect(kafka, { namespace });
  const app = await startApprovalApp({ namespace, schema, databaseUrl: database.url, reviewers, ...(keyring && { keyring }) });
  const browser: Browser = await chromium.launch({ executablePath: CHROMIUM, headless: true, args: ['--no-sandbox'] });
  const contexts: BrowserContext[] = [];
  const complaints: string[] = [];
  const reader = reviewers[0];
  if (!reader) throw new Error('an inbox harness needs a reviewer');
  return {
    app,
    producer,
    complaints,
    async openInbox(hash = '') {
      const context = await browser.newContext();
      contexts.push(context);
      const page = await context.newPage();
      page.setDefaultTimeout(STEP_MS);
      page.on('pageerror', (error) => complaints.push(`page error: ${error.message}`));
      page.on('console', (message) => {
        if (message.type() === 'error' && /Content Security Policy|Refused to/i.test(message.text())) complaints.push(`policy: ${message.text()}`);
      });
      await page.goto(`${app.baseUrl}/inbox${hash}`);
      return page;
    },
    async publish(options = {}) {
      const made = testRequest(options);
      await producer.publish('approvals', made.event);
      await waitFor(async () => ((await app.get(`/v1/approvals/${made.approvalId}`, bearer(reader))).status === 200 ? true : undefined), {
        what: 'the request projected',
        timeoutMs: STEP_MS,
      });
      return made;
    },
    async closePages() {
      await Promise.all(contexts.splice(0).map((c) => c.close()));
    },
    async close() {
      await browser.close();
      await app.close();
      await producer.close();
      await database.drop();
    },
  };
}

/** Signs in with a key (the page's own form). */
export async function signIn(page: Page, key: string): Promise<void> {
  await page.getByLabel('Reviewer API key').fill(key);
  await page.getByTestId('sign-in-submit').click();
}

/** Signs in and waits for the inbox. */
export async function signedIn(page: Page, reviewer: Pick<TestReviewer, 'key'>): Promise<void> {
  await signIn(page, reviewer.key);
  await page.getByTestId('inbox').waitFor({ state: 'visible' });
}

/** The card of a pending request. */
export const card = (page: Page, approvalId: string): Locator => page.locator(`[data-testid="approval"][data-approval-id="${approvalId}"]`);

/** The history's entry of an approval. */
export const historyEntry = (page: Page, approvalId: string): Locator => page.locator(`[data-testid="history-entry"][data-approval-id="${approvalId}"]`);

export const text = async (locator: Locator): Promise<string> => (await locator.textContent()) ?? '';
export const json = async (locator: Locator): Promise<JsonValue> => JSON.parse(await text(locator)) as JsonValue;

/** Whether an element holds the focus (the selected card's heading does). */
export const focused = (locator: Locator): Promise<boolean> => locator.evaluate((node) => node.matches(':focus'));

/** The status the history shows for an approval, once it lists it. */
export async function recorded(page: Page, approvalId: string): Promise<string | null> {
  const entry = historyEntry(page, approvalId);
  await entry.waitFor({ state: 'visible' });
  return entry.getAttribute('data-status');
}

/** The rows of a diff of edits shown in `scope`: [field, original, edited, kind]. */
export const reviewedChanges = (scope: Locator) =>
  scope.getByTestId('change').evaluateAll((rows) =>
    rows.map((row) => [
      row.getAttribute('data-path'),
      row.querySelector('[data-testid="change-before"]')?.textContent,
      row.querySelector('[data-testid="change-after"]')?.textContent,
      row.getAttribute('data-kind'),
    ]),
  );

/** The text of one field of every card shown. */
export const shown = (page: Page, testid: string): Promise<string[]> => page.locator(`[data-testid="approval"] [data-testid="${testid}"]`).allTextContents();
