/**
 * The reviewers' inbox: sign-in, the pending requests, the history of decisions, filters, the
 * live stream and the keyboard shortcuts, wired together. Served as `/inbox/app.js` (an ES module).
 */
import { Api, type Answer, type Approval, type Context, describe, field, isActor, isPage, isStatus, listPath, matches, statusWords } from './api.js';
import { byTestId, say, shortId } from './dom.js';
import { FilterBar } from './filters.js';
import { HistoryList } from './history.js';
import { PAGE_SIZE, PendingList } from './pending.js';
import { installShortcuts } from './shortcuts.js';
import { listen } from './stream.js';

const KEY_SLOT = 'gatehouse.inbox.key';
/** A deep link to one approval (the webhooks' `link`); it names the approval only, never a credential. */
const APPROVAL_LINK = /^#approval=(appr_[0-9a-f]{64})$/;
const REFUSED = 'Your key is no longer accepted. Sign in again.';

const ui = {
  signIn: byTestId('sign-in'),
  signInForm: byTestId<HTMLFormElement>('sign-in-form'),
  keyInput: byTestId<HTMLInputElement>('api-key'),
  signInButton: byTestId<HTMLButtonElement>('sign-in-submit'),
  signInError: byTestId('sign-in-error'),
  session: byTestId('session'),
  reviewer: byTestId('reviewer'),
  live: byTestId('live-status'),
  signOut: byTestId<HTMLButtonElement>('sign-out'),
  inbox: byTestId('inbox'),
  notice: byTestId('notice'),
  heading: byTestId('pending-heading'),
};

/** One signed-in key; replaced at sign-out, so a late answer of the old one changes nothing. */
interface Session {
  readonly api: Api;
  readonly stream: AbortController;
  readonly pending: PendingList;
  readonly history: HistoryList;
}

let session: Session | null = null;

const notice = (message: string) => say(ui.notice, message);

const filters = new FilterBar(
  {
    form: byTestId<HTMLFormElement>('filters'),
    tenant: byTestId<HTMLInputElement>('filter-tenant'),
    connector: byTestId<HTMLInputElement>('filter-connector'),
    tenants: byTestId<HTMLDataListElement>('tenant-options'),
    connectors: byTestId<HTMLDataListElement>('connector-options'),
    clear: byTestId<HTMLButtonElement>('filter-clear'),
    state: byTestId('filter-state'),
    error: byTestId('filter-error'),
  },
  () => {
    if (!session) return;
    session.pending.clear();
    session.history.clear();
    void session.pending.reconcile();
    void session.history.reload();
  },
);

/** A decision of this reviewer was recorded: say so, and show it in the history at once. */
function decided(history: HistoryList, view: Approval, answer: Answer, comment: string): void {
  const status = field(answer, 'status');
  const reviewer = field(answer, 'reviewer');
  const decidedAt = field(answer, 'decidedAt');
  const by = isActor(reviewer) ? ` by ${reviewer.id}` : '';
  notice(`${statusWords(String(status))}: ${view.connectorId} (${shortId(view.approvalId)})${by}.`);
  if (!isStatus(status)) return;
  const edited = field(answer, 'editedArguments');
  history.record({
    ...view,
    status,
    ...(isActor(reviewer) && { settledBy: reviewer }),
    settledAt: typeof decidedAt === 'string' ? decidedAt : new Date().toISOString(),
    ...(comment && { comment }),
    ...(edited !== undefined && { editedArguments: edited }),
  });
}

function startSession(key: string): Session {
  const api = new Api(key);
  const ctx: Context = {
    api,
    current: () => session === started,
    refused: (answer) => {
      if (answer.status !== 401) return false;
      if (session === started) signOut(REFUSED);
      return true;
    },
    notice,
    filters: () => filters.current(),
  };
  const suggest = (view: Approval) => filters.suggest(view);
  const history = new HistoryList(
    ctx,
    { list: byTestId<HTMLOListElement>('history'), empty: byTestId('history-empty'), loadMore: byTestId<HTMLButtonElement>('history-more') },
    suggest,
  );
  const pending = new PendingList(
    ctx,
    {
      list: byTestId<HTMLOListElement>('approval-list'),
      empty: byTestId('empty'),
      loadMore: byTestId<HTMLButtonElement>('load-more'),
      heading: ui.heading,
    },
    { decided: (view, answer, comment) => decided(history, view, answer, comment), seen: suggest },
  );
  const started: Session = { api, stream: new AbortController(), pending, history };
  return started;
}

function follow(s: Session): void {
  void listen(s.api, s.stream.signal, {
    state: (state, text) => {
      ui.live.setAttribute('data-state', state);
      ui.live.textContent = text;
    },
    ready: (reviewer) => {
      if (session !== s) return;
      if (reviewer) ui.reviewer.textContent = `Signed in as ${reviewer}`;
      // Whatever changed while the stream was down (or before it first connected).
      void s.pending.reconcile();
      void s.history.reload();
    },
    change: (change) => {
      if (session !== s) return;
      void s.pending.onChange(change);
      if (change.status !== 'pending' && matches(filters.current(), change)) s.history.soon();
    },
    refused: () => {
      if (session === s) signOut(REFUSED);
    },
  });
}

async function signIn(key: string): Promise<void> {
  const s = startSession(key);
  ui.signInButton.disabled = true;
  ui.signInButton.textContent = 'Signing in…';
  say(ui.signInError, '');
  const first = await s.api.call('GET', listPath('pending', filters.current(), PAGE_SIZE, null));
  ui.signInButton.disabled = false;
  ui.signInButton.textContent = 'Sign in';
  if (first.status !== 200 || !isPage(first.body)) {
    sessionStorage.removeItem(KEY_SLOT);
    say(ui.signInError, first.status === 401 ? 'That API key was not accepted. Check it and sign in again.' : `Could not sign in: ${describe(first)}`);
    ui.keyInput.focus();
    return;
  }
  sessionStorage.setItem(KEY_SLOT, key);
  session = s;
  ui.keyInput.value = '';
  ui.signIn.hidden = true;
  ui.session.hidden = false;
  ui.inbox.hidden = false;
  ui.reviewer.textContent = 'Signed in';
  notice('');
  s.pending.addPage(first.body, true);
  void s.history.reload();
  ui.heading.focus();
  follow(s);
  revealLinked();
}

/** Selects the approval the address names, if it names one. */
function revealLinked(): void {
  const id = APPROVAL_LINK.exec(location.hash)?.[1];
  if (session && id) void session.pending.reveal(id);
}

function signOut(message: string): void {
  const s = session;
  session = null;
  if (s) {
    s.stream.abort();
    s.pending.clear();
    s.history.clear();
  }
  sessionStorage.removeItem(KEY_SLOT);
  filters.reset();
  notice('');
  ui.inbox.hidden = true;
  ui.session.hidden = true;
  ui.signIn.hidden = false;
  say(ui.signInError, message);
  ui.keyInput.focus();
}

/** The selected request, for a shortcut that acts on one; says what to do when there is none to act on. */
function target(s: Session): ReturnType<PendingList['selected']> {
  const card = s.pending.selected();
  if (!card) notice('Select a request first: j and k move between requests.');
  return card && !card.busy ? card : undefined;
}

function move(s: Session, step: 1 | -1): void {
  const cards = s.pending.ordered();
  if (cards.length === 0) return;
  const selected = s.pending.selected();
  const at = selected ? cards.indexOf(selected) + step : step > 0 ? 0 : cards.length - 1;
  const card = cards[Math.min(cards.length - 1, Math.max(0, at))];
  card?.focus();
  card?.node.scrollIntoView({ block: 'nearest' });
}

function shortcut(s: Session, verdict: 'approve' | 'deny'): void {
  const card = target(s);
  if (!card) return;
  if (card.editing()) {
    // A plain verdict would drop the reviewer's edits: the edit is confirmed with its own button.
    notice('This request is being edited: confirm the edits with their button, or close the editor first.');
    return;
  }
  void s.pending.decide(card, { verdict });
}

installShortcuts(() => {
  const s = session;
  if (!s) return null;
  return {
    next: () => move(s, 1),
    previous: () => move(s, -1),
    approve: () => shortcut(s, 'approve'),
    deny: () => shortcut(s, 'deny'),
    edit: () => target(s)?.toggleEditor(true),
    filter: () => filters.focus(),
  };
});

ui.signInForm.addEventListener('submit', (event) => {
  event.preventDefault();
  const key = ui.keyInput.value.trim();
  if (!key) {
    say(ui.signInError, 'Paste your reviewer API key.');
    ui.keyInput.focus();
    return;
  }
  void signIn(key);
});
ui.signOut.addEventListener('click', () => signOut(''));
window.addEventListener('hashchange', revealLinked);
byTestId('load-more').addEventListener('click', () => void session?.pending.loadMore());
byTestId('history-more').addEventListener('click', () => void session?.history.loadMore());

const remembered = sessionStorage.getItem(KEY_SLOT);
if (remembered) void signIn(remembered);
else ui.keyInput.focus();
