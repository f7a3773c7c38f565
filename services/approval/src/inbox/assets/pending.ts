import {
  type Answer,
  type Approval,
  approvalPath,
  type Change,
  type Context,
  type DecisionRequest,
  describe,
  field,
  isApproval,
  isPage,
  listPath,
  matches,
  type Page,
  statusWords,
} from './api.js';
import { Card } from './card.js';
import { h, shortId } from './dom.js';

/** Requests per page of the pending list. */
export const PAGE_SIZE = 25;

/** The page's elements the pending list owns. */
export interface PendingElements {
  readonly list: HTMLOListElement;
  readonly empty: HTMLElement;
  readonly loadMore: HTMLButtonElement;
  readonly heading: HTMLElement;
}

/** What the list tells the rest of the page. */
export interface PendingEvents {
  /** A decision of this reviewer was recorded (a 200): the answer, and the comment sent with it. */
  decided(view: Approval, answer: Answer, comment: string): void;
  /** An approval was shown (its tenant and connector become filter suggestions). */
  seen(view: Approval): void;
}

/** Newest request first, as the API orders them. */
function newer(a: Approval, b: Approval): boolean {
  return a.requestedAt !== b.requestedAt ? a.requestedAt > b.requestedAt : a.approvalId > b.approvalId;
}

const pause = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

/** The `details.problems` of a 422, when the body has them. */
function problemsOf(answer: Answer): readonly Record<string, unknown>[] | null {
  const details = field(answer, 'details');
  const problems = typeof details === 'object' && details !== null ? (details as Record<string, unknown>)['problems'] : undefined;
  return Array.isArray(problems) ? problems.filter((p): p is Record<string, unknown> => typeof p === 'object' && p !== null) : null;
}

/**
 * The pending requests under the current filters: the first page kept in step with the service
 * (the event stream, re-reads), more pages on demand, and each card's decision sent and answered.
 */
export class PendingList {
  private readonly cards = new Map<string, Card>();
  private cursor: string | null = null;
  /** Bumped by `clear` (new filters, sign-out): an answer to a read begun before is dropped. */
  private generation = 0;

  constructor(
    private readonly ctx: Context,
    private readonly ui: PendingElements,
    private readonly events: PendingEvents,
  ) {}

  /** Forgets every card, and every read still under way. */
  clear(): void {
    this.generation += 1;
    this.cards.clear();
    this.cursor = null;
    this.ui.list.replaceChildren();
    this.chrome();
  }

  /** Adds the pending items of a page; the first page also drops the cards it no longer lists. */
  addPage(page: Page, first: boolean): void {
    const items = page.items.filter((view) => view.status === 'pending' && matches(this.ctx.filters(), view));
    if (first) {
      const ids = new Set(items.map((view) => view.approvalId));
      const oldest = page.nextCursor ? items.at(-1) : undefined;
      for (const [id, card] of this.cards) {
        if (!ids.has(id) && !card.busy && (!oldest || !newer(oldest, card.view))) this.remove(id);
      }
      if (!this.cursor) this.cursor = page.nextCursor ?? null;
    } else {
      this.cursor = page.nextCursor ?? null;
    }
    for (const view of items) this.insert(view, false);
    this.chrome();
  }

  /** Re-reads the first page (after the stream (re)connected, or a decision lost a race). */
  async reconcile(): Promise<void> {
    const generation = this.generation;
    const answer = await this.ctx.api.call('GET', listPath('pending', this.ctx.filters(), PAGE_SIZE, null));
    if (!this.fresh(generation) || this.ctx.refused(answer)) return;
    if (answer.status === 200 && isPage(answer.body)) this.addPage(answer.body, true);
    else this.ctx.notice(`Could not read the pending requests: ${describe(answer)}`);
  }

  async loadMore(): Promise<void> {
    if (!this.cursor) return;
    const generation = this.generation;
    this.ui.loadMore.disabled = true;
    const answer = await this.ctx.api.call('GET', listPath('pending', this.ctx.filters(), PAGE_SIZE, this.cursor));
    this.ui.loadMore.disabled = false;
    if (!this.fresh(generation) || this.ctx.refused(answer)) return;
    if (answer.status === 200 && isPage(answer.body)) this.addPage(answer.body, false);
    else this.ctx.notice(`Could not load more: ${describe(answer)}`);
  }

  /** A change the event stream announced. */
  async onChange(change: Change): Promise<void> {
    const card = this.cards.get(change.approvalId);
    if (change.status === 'pending') {
      if (!matches(this.ctx.filters(), change)) return;
      const generation = this.generation;
      // The stream announces a change once the projection holds it; a replica behind a load
      // balancer may still lag the one that announced it, so a fresh request may be a 404 briefly.
      for (let attempt = 1; attempt <= 8 && this.fresh(generation) && !this.cards.has(change.approvalId); attempt += 1) {
        const answer = await this.ctx.api.call('GET', approvalPath(change.approvalId));
        if (!this.fresh(generation) || this.ctx.refused(answer)) return;
        if (answer.status === 200 && isApproval(answer.body) && answer.body.status === 'pending') this.insert(answer.body, true);
        if (answer.status !== 404) return;
        await pause(150 * attempt);
      }
    } else if (card && !card.busy) {
      // Settled elsewhere (another reviewer, an expiry, a withdrawal); a decision of ours answers for itself.
      this.remove(change.approvalId);
      this.ctx.notice(`${card.view.connectorId} (${shortId(change.approvalId)}) was settled elsewhere: ${statusWords(change.status)}.`);
    }
  }

  /** Sends a card's decision and shows the answer. */
  async decide(card: Card, request: DecisionRequest): Promise<void> {
    const view = card.view;
    const comment = card.commentText();
    card.showError('');
    card.setBusy(true);
    const answer = await this.ctx.api.call('POST', `${approvalPath(view.approvalId)}/decision`, { ...request, ...(comment && { comment }) });
    if (!this.ctx.current()) return;
    card.setBusy(false);
    if (this.ctx.refused(answer)) return;
    const label = `${view.connectorId} (${shortId(view.approvalId)})`;
    const problems = problemsOf(answer);
    if (answer.status === 200) {
      this.remove(view.approvalId);
      this.events.decided(view, answer, comment);
    } else if (answer.status === 202) {
      // Under a quorum: this approval counted, the request stays pending until enough reviewers agree.
      this.ctx.notice(`Counted your approval of ${label}: ${String(field(answer, 'votes'))} of ${String(field(answer, 'required'))} needed.`);
    } else if (answer.status === 409 || answer.status === 410) {
      this.ctx.notice(`Not applied to ${label}: ${describe(answer)}. The list was refreshed.`);
      await this.refreshOne(view.approvalId);
      await this.reconcile();
    } else if (answer.status === 422 && problems) {
      const line = (p: Record<string, unknown>) => [
        h('code', { text: String(p['path']) }),
        ' ',
        h('strong', { text: String(p['keyword']) }),
        `: ${String(p['message'])}`,
      ];
      card.showProblems(problems.map(line));
    } else {
      card.showError(`Not decided: ${describe(answer)}`);
    }
  }

  /** Selects the request a deep link names (`/inbox#approval=<id>`, as webhooks send), reading it when no card shows it. */
  async reveal(id: string): Promise<void> {
    const generation = this.generation;
    if (!this.cards.has(id)) {
      const answer = await this.ctx.api.call('GET', approvalPath(id));
      if (!this.fresh(generation) || this.ctx.refused(answer)) return;
      if (answer.status !== 200 || !isApproval(answer.body)) return this.ctx.notice(`The linked approval cannot be shown: ${describe(answer)}`);
      const view = answer.body;
      const label = `${view.connectorId} (${shortId(view.approvalId)})`;
      if (view.status !== 'pending') {
        const by = view.settledBy ? ` by ${view.settledBy.id}` : '';
        return this.ctx.notice(`The linked approval ${label} is already settled: ${statusWords(view.status)}${by}.`);
      }
      if (!matches(this.ctx.filters(), view)) {
        return this.ctx.notice(`The linked approval ${label} is hidden by the filters: clear them to see it.`);
      }
      this.insert(view, false);
    }
    const card = this.cards.get(id);
    card?.focus();
    card?.node.scrollIntoView({ block: 'start' });
  }

  /** The cards in the order shown. */
  ordered(): Card[] {
    return [...this.ui.list.children].flatMap((node) => {
      const card = this.cards.get(node.getAttribute('data-approval-id') ?? '');
      return card ? [card] : [];
    });
  }

  /** The card that holds the focus: the one the keyboard shortcuts act on. */
  selected(): Card | undefined {
    return this.ordered().find((card) => card.node.contains(document.activeElement));
  }

  /** Re-reads one approval and drops its card when it is no longer pending. */
  private async refreshOne(id: string): Promise<void> {
    const generation = this.generation;
    const answer = await this.ctx.api.call('GET', approvalPath(id));
    if (!this.fresh(generation) || this.ctx.refused(answer)) return;
    const settled = answer.status === 200 && isApproval(answer.body) && answer.body.status !== 'pending';
    if (answer.status === 404 || answer.status === 403 || settled) this.remove(id);
  }

  /** Places a card in order; a live arrival older than every card shown waits for "load more". */
  private insert(view: Approval, live: boolean): void {
    if (this.cards.has(view.approvalId)) return;
    // Before the newest of the cards older than it.
    let before: Card | undefined;
    for (const other of this.cards.values()) {
      if (newer(view, other.view) && (!before || newer(other.view, before.view))) before = other;
    }
    if (live && !before && this.cursor) return;
    const card = new Card(view, { decide: (c, request) => void this.decide(c, request) });
    this.cards.set(view.approvalId, card);
    this.ui.list.insertBefore(card.node, before ? before.node : null);
    this.events.seen(view);
    this.chrome();
  }

  private remove(id: string): void {
    const card = this.cards.get(id);
    if (!card) return;
    const hadFocus = card.node.contains(document.activeElement);
    const next = this.neighbour(card);
    this.cards.delete(id);
    card.node.remove();
    this.chrome();
    // Keeps the keyboard where the reviewer works: on the next request, or the list's heading.
    if (hadFocus && next) next.focus();
    else if (hadFocus) this.ui.heading.focus();
  }

  private neighbour(card: Card): Card | undefined {
    const cards = this.ordered();
    const at = cards.indexOf(card);
    return cards[at + 1] ?? cards[at - 1];
  }

  private fresh(generation: number): boolean {
    return this.ctx.current() && generation === this.generation;
  }

  private chrome(): void {
    this.ui.empty.hidden = this.cards.size > 0;
    this.ui.loadMore.hidden = !this.cursor;
  }
}
