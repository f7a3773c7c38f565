import { type Approval, type DecisionRequest } from './api.js';
import { changesTable, countOf } from './changes.js';
import { diffJson } from './diff.js';
import { type Child, h, pretty, say, shortId, timeOf, until } from './dom.js';

/** What a card asks of the pending list: send a decision (the list owns the call and its answer). */
export interface CardHandlers {
  decide(card: Card, request: DecisionRequest): void;
}

function fact(label: string, value: Child, testid: string): HTMLElement[] {
  return [h('dt', { text: label }), h('dd', { testid }, [value])];
}

/**
 * One pending request: what it asks, and the controls to decide it. Approving with edits goes
 * through a review of the changes, field by field, and sends exactly the arguments reviewed.
 */
export class Card {
  readonly node: HTMLLIElement;
  busy = false;
  private readonly comment: HTMLTextAreaElement;
  private readonly heading: HTMLHeadingElement;
  private readonly editBox: HTMLTextAreaElement;
  private readonly editor: HTMLDivElement;
  private readonly editToggle: HTMLButtonElement;
  private readonly problems: HTMLUListElement;
  private readonly review: HTMLDivElement;
  private readonly error: HTMLParagraphElement;
  /** The parsed edit the review shows; cleared by any keystroke in the edit box. */
  private reviewed: { readonly value: unknown } | null = null;

  constructor(
    readonly view: Approval,
    private readonly handlers: CardHandlers,
  ) {
    const id = view.approvalId;
    this.comment = h('textarea', { id: `comment-${id}`, testid: 'comment', rows: 2, maxlength: 2000 });
    this.heading = h('h3', { id: `title-${id}`, testid: 'connector', tabindex: '-1', text: view.connectorId });
    this.editBox = h('textarea', { id: `edit-${id}`, testid: 'edit-arguments', rows: 8, spellcheck: 'false', 'aria-describedby': `problems-${id}` });
    this.editBox.value = pretty(view.arguments);
    this.editBox.addEventListener('input', () => this.closeReview());
    this.problems = h('ul', { id: `problems-${id}`, className: 'problems', testid: 'edit-problems', role: 'alert', hidden: true });
    this.review = h('div', { className: 'review', testid: 'edit-review', hidden: true });
    this.error = h('p', { className: 'error', testid: 'card-error', role: 'alert', hidden: true });
    this.editor = h('div', { id: `editor-${id}`, className: 'editor', testid: 'editor', hidden: true }, [
      h('label', { for: this.editBox.id, text: 'Edited arguments (JSON)' }),
      this.editBox,
      this.problems,
      h('div', { className: 'actions' }, [
        h('button', { type: 'button', testid: 'approve-with-edits', text: 'Review changes…', onclick: () => this.reviewEdits() }),
      ]),
      this.review,
    ]);
    this.editToggle = h('button', {
      type: 'button',
      testid: 'edit',
      text: 'Edit',
      'aria-expanded': 'false',
      'aria-controls': this.editor.id,
      'aria-keyshortcuts': 'e',
      onclick: () => this.toggleEditor(),
    });
    this.node = h('li', { className: 'card', testid: 'approval', 'data-approval-id': id }, [
      h('article', { 'aria-labelledby': this.heading.id }, [...this.summary(), this.controls()]),
    ]);
  }

  /** The comment the reviewer typed, trimmed. */
  commentText(): string {
    return this.comment.value.trim();
  }

  /** Whether the edit box is open: a plain approval would drop the edits, so shortcuts leave it alone. */
  editing(): boolean {
    return !this.editor.hidden;
  }

  /** Moves focus to the card (its heading), which selects it for the keyboard shortcuts. */
  focus(): void {
    this.heading.focus();
  }

  toggleEditor(open = this.editor.hidden): void {
    this.editor.hidden = !open;
    this.editToggle.setAttribute('aria-expanded', String(open));
    if (open) this.editBox.focus();
    else this.closeReview();
  }

  setBusy(busy: boolean): void {
    this.busy = busy;
    this.node.setAttribute('aria-busy', String(busy));
    for (const control of this.node.querySelectorAll<HTMLButtonElement | HTMLTextAreaElement>('button, textarea')) control.disabled = busy;
  }

  showError(message: string): void {
    say(this.error, message);
  }

  /** Lists what is wrong with the edit (each line a list item); none hides the list. */
  showProblems(lines: readonly (readonly Child[])[]): void {
    this.problems.replaceChildren(...lines.map((parts) => h('li', { testid: 'edit-problem' }, parts)));
    this.problems.hidden = lines.length === 0;
    if (lines.length > 0) {
      this.closeReview();
      this.editBox.focus();
    }
  }

  private summary(): Child[] {
    const view = this.view;
    const requester = view.requester;
    const quorum = view.quorum;
    const details = h('dl', { className: 'facts' }, [
      ...fact('Tenant', view.tenant, 'tenant'),
      ...fact('Requester', `${requester.id} (${requester.role}, ${requester.kind})`, 'requester'),
      ...fact('Reason', view.reason, 'reason'),
      ...fact('Requested', timeOf(view.requestedAt), 'requested-at'),
      ...fact('Deadline', timeOf(view.deadline, until(view.deadline)), 'deadline'),
      ...fact('Redacted', view.redactedPaths.length > 0 ? view.redactedPaths.join(', ') : 'nothing', 'redacted-paths'),
      ...(quorum && Array.isArray(quorum.reviewers)
        ? fact('Quorum', `${quorum.required} of ${quorum.reviewers.join(', ')}; ${view.votes.length} approved so far`, 'quorum')
        : []),
    ]);
    const hasPreview = view.dryRunPreview !== undefined;
    return [
      h('header', { className: 'card-head' }, [this.heading, h('code', { className: 'id', title: view.approvalId, text: shortId(view.approvalId) })]),
      view.toolDescription ? h('p', { className: 'description', testid: 'tool-description', text: view.toolDescription }) : null,
      details,
      h('h4', { text: 'Arguments' }),
      h('pre', { testid: 'arguments' }, [h('code', { text: pretty(view.arguments) })]),
      hasPreview && h('h4', { text: 'Dry-run preview (what the tool reported it would do)' }),
      hasPreview && h('pre', { testid: 'dry-run-preview' }, [h('code', { text: pretty(view.dryRunPreview) })]),
    ];
  }

  private controls(): HTMLElement {
    return h('div', { className: 'decide' }, [
      h('label', { for: this.comment.id, text: 'Comment (optional)' }),
      this.comment,
      h('div', { className: 'actions' }, [
        this.verdictButton('approve', 'Approve', 'a'),
        this.verdictButton('deny', 'Deny', 'd'),
        this.editToggle,
      ]),
      this.editor,
      this.error,
    ]);
  }

  /** Approve or Deny: the verdict is its test id and class, the key its shortcut. */
  private verdictButton(verdict: 'approve' | 'deny', text: string, key: string): HTMLButtonElement {
    const onclick = () => this.handlers.decide(this, { verdict });
    return h('button', { type: 'button', className: verdict, testid: verdict, text, 'aria-keyshortcuts': key, onclick });
  }

  /** Parses the edit and shows what it changes; the reviewer then confirms or goes back. */
  private reviewEdits(): void {
    let edited: unknown;
    try {
      edited = JSON.parse(this.editBox.value);
    } catch (e) {
      this.showProblems([[`The edited arguments are not valid JSON: ${e instanceof Error ? e.message : 'parse error'}`]]);
      return;
    }
    const changes = diffJson(this.view.arguments, edited);
    if (changes.length === 0) {
      this.showProblems([['The edited arguments equal the original ones: use Approve instead.']]);
      return;
    }
    this.showProblems([]);
    this.reviewed = { value: edited };
    const confirm = h('button', { type: 'button', className: 'approve', testid: 'confirm-edits', text: 'Confirm: approve with these edits' });
    confirm.addEventListener('click', () => this.confirmEdits());
    const back = h('button', { type: 'button', testid: 'back-to-edit', text: 'Back to editing', onclick: () => this.backToEditing() });
    const previewNote = h('p', { className: 'hint', text: 'The dry-run preview above was made for the original arguments.' });
    this.review.replaceChildren(
      h('h4', { testid: 'change-count', text: countOf(changes.length) }),
      changesTable(changes),
      ...(this.view.dryRunPreview !== undefined ? [previewNote] : []),
      h('div', { className: 'actions' }, [confirm, back]),
    );
    this.review.hidden = false;
    confirm.focus();
  }

  private confirmEdits(): void {
    // Sends the value the review showed; an edit after it closed the review, so the two cannot differ.
    if (this.reviewed) this.handlers.decide(this, { verdict: 'approve-with-edits', editedArguments: this.reviewed.value });
  }

  private backToEditing(): void {
    this.closeReview();
    this.editBox.focus();
  }

  private closeReview(): void {
    this.reviewed = null;
    this.review.hidden = true;
    this.review.replaceChildren();
  }
}
