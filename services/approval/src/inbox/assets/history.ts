import { type Approval, type Context, describe, isPage, listPath, matches, type Page, statusWords } from './api.js';
import { changesTable, countOf } from './changes.js';
import { diffJson } from './diff.js';
import { h, shortId, timeOf } from './dom.js';

const PAGE_SIZE = 20;
/** Decisions often come in bursts (a quorum, a reviewer clearing a queue): one re-read for each burst. */
const RELOAD_DELAY_MS = 250;

/** The page's elements the history owns. */
export interface HistoryElements {
  readonly list: HTMLOListElement;
  readonly empty: HTMLElement;
  readonly loadMore: HTMLButtonElement;
}

/** Newest decision first, as `order=settled` lists them. */
function later(a: Approval, b: Approval): boolean {
  const at = (view: Approval) => view.settledAt ?? '';
  return at(a) !== at(b) ? at(a) > at(b) : a.approvalId > b.approvalId;
}

/** One decided approval: verdict, what it was about, who decided when, the comment, and an edit's changes. */
function entry(view: Approval): HTMLLIElement {
  const id = view.approvalId;
  const edits = view.status === 'approved-with-edits' && view.editedArguments !== undefined ? diffJson(view.arguments, view.editedArguments) : [];
  const voters = view.quorum && view.votes.length > 0 ? ` (votes: ${view.votes.map((v) => v.reviewer.id).join(', ')})` : '';
  return h('li', { className: 'entry', testid: 'history-entry', 'data-approval-id': id, 'data-status': view.status }, [
    h('p', { className: 'entry-head' }, [
      h('strong', { className: 'verdict', testid: 'history-verdict', text: statusWords(view.status) }),
      ' ',
      h('span', { testid: 'history-connector', text: view.connectorId }),
      ' · ',
      h('span', { testid: 'history-tenant', text: view.tenant }),
      ' ',
      h('code', { className: 'id', title: id, text: shortId(id) }),
    ]),
    h('p', { className: 'entry-by' }, [
      'by ',
      h('span', { testid: 'history-reviewer', text: view.settledBy?.id ?? 'an unknown reviewer' }),
      voters,
      view.settledAt ? ' at ' : '',
      view.settledAt ? h('span', { testid: 'history-at' }, [timeOf(view.settledAt)]) : null,
    ]),
    view.comment ? h('blockquote', { testid: 'history-comment', text: view.comment }) : null,
    edits.length > 0
      ? h('details', { className: 'entry-edits' }, [h('summary', { text: countOf(edits.length) }), changesTable(edits)])
      : null,
  ]);
}

/**
 * Decided approvals the reviewer may see, by any reviewer, newest decision first, from the
 * service's projection (`status=decided&order=settled`) under the current filters.
 */
export class HistoryList {
  private readonly entries = new Map<string, { readonly view: Approval; readonly node: HTMLLIElement }>();
  private cursor: string | null = null;
  /** Bumped by every reload and `clear`: only the latest read may change the list. */
  private generation = 0;
  private timer: ReturnType<typeof setTimeout> | undefined;

  constructor(
    private readonly ctx: Context,
    private readonly ui: HistoryElements,
    private readonly seen: (view: Approval) => void,
  ) {}

  clear(): void {
    this.generation += 1;
    clearTimeout(this.timer);
    this.entries.clear();
    this.cursor = null;
    this.ui.list.replaceChildren();
    this.chrome();
  }

  /** Reads the first page again, replacing the list. */
  async reload(): Promise<void> {
    clearTimeout(this.timer);
    this.generation += 1;
    const generation = this.generation;
    const answer = await this.ctx.api.call('GET', listPath('history', this.ctx.filters(), PAGE_SIZE, null));
    if (!this.fresh(generation) || this.ctx.refused(answer)) return;
    if (answer.status !== 200 || !isPage(answer.body)) {
      this.ctx.notice(`Could not read the history: ${describe(answer)}`);
      return;
    }
    this.entries.clear();
    this.ui.list.replaceChildren();
    this.add(answer.body);
  }

  /** A reload shortly (after the event stream announced a decision). */
  soon(): void {
    clearTimeout(this.timer);
    this.timer = setTimeout(() => void this.reload(), RELOAD_DELAY_MS);
  }

  async loadMore(): Promise<void> {
    if (!this.cursor) return;
    const generation = this.generation;
    this.ui.loadMore.disabled = true;
    const answer = await this.ctx.api.call('GET', listPath('history', this.ctx.filters(), PAGE_SIZE, this.cursor));
    this.ui.loadMore.disabled = false;
    if (!this.fresh(generation) || this.ctx.refused(answer)) return;
    if (answer.status === 200 && isPage(answer.body)) this.add(answer.body);
    else this.ctx.notice(`Could not load more of the history: ${describe(answer)}`);
  }

  /** Shows a decision of this reviewer at once, before the next read lists it. */
  record(view: Approval): void {
    if (matches(this.ctx.filters(), view)) this.place(view);
    this.chrome();
  }

  private add(page: Page): void {
    this.cursor = page.nextCursor ?? null;
    for (const view of page.items) this.place(view);
    this.chrome();
  }

  /** Puts an entry in order, replacing the one of the same approval. */
  private place(view: Approval): void {
    this.entries.get(view.approvalId)?.node.remove();
    const node = entry(view);
    let before: { readonly view: Approval; readonly node: HTMLLIElement } | undefined;
    for (const other of this.entries.values()) {
      if (other.view.approvalId !== view.approvalId && later(view, other.view) && (!before || later(other.view, before.view))) before = other;
    }
    this.entries.set(view.approvalId, { view, node });
    this.ui.list.insertBefore(node, before ? before.node : null);
    this.seen(view);
  }

  private fresh(generation: number): boolean {
    return this.ctx.current() && generation === this.generation;
  }

  private chrome(): void {
    this.ui.empty.hidden = this.entries.size > 0;
    this.ui.loadMore.hidden = !this.cursor;
  }
}
