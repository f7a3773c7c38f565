/**
 * `GET /inbox/app.js`: the inbox's whole client, plain browser JavaScript served as written
 * (no build step, no framework, nothing fetched from elsewhere).
 *
 * Approval requests are written by agents, so every value of a request is hostile: it reaches
 * the DOM only as text (`textContent`, `append(string)`, `value`) or an attribute value, never
 * as markup. The reviewer's key lives in `sessionStorage` and leaves the page only as a bearer
 * header to this origin. Kept free of template literals so it can sit in `String.raw` as is.
 */
export const INBOX_SCRIPT = String.raw`'use strict';
(() => {
  const KEY_SLOT = 'gatehouse.inbox.key';
  const PAGE_SIZE = 25;
  const MAX_BACKOFF_MS = 30000;
  const VERDICT_WORDS = { approved: 'Approved', 'approved-with-edits': 'Approved with edits', denied: 'Denied', expired: 'Expired', cancelled: 'Withdrawn by the requester' };

  const byTestId = (id) => document.querySelector('[data-testid="' + id + '"]');
  const ui = {
    signIn: byTestId('sign-in'),
    signInForm: byTestId('sign-in-form'),
    keyInput: byTestId('api-key'),
    signInButton: byTestId('sign-in-submit'),
    signInError: byTestId('sign-in-error'),
    session: byTestId('session'),
    reviewer: byTestId('reviewer'),
    live: byTestId('live-status'),
    signOut: byTestId('sign-out'),
    inbox: byTestId('inbox'),
    notice: byTestId('notice'),
    heading: byTestId('pending-heading'),
    list: byTestId('approval-list'),
    empty: byTestId('empty'),
    loadMore: byTestId('load-more'),
    decisions: byTestId('decisions'),
  };

  // The signed-in session; every async step checks it is still current before touching the page.
  let session = null;

  /** An element with properties, attributes and children; strings become text nodes. */
  function h(tag, props, children) {
    const node = document.createElement(tag);
    for (const [name, value] of Object.entries(props || {})) {
      if (value === undefined || value === null || value === false) continue;
      if (name === 'text') node.textContent = String(value);
      else if (name === 'testid') node.setAttribute('data-testid', String(value));
      else if (name === 'className') node.className = String(value);
      else if (name === 'onclick') node.addEventListener('click', value);
      else node.setAttribute(name, value === true ? '' : String(value));
    }
    for (const child of children || []) if (child !== null && child !== undefined) node.append(child);
    return node;
  }

  const pretty = (value) => JSON.stringify(value, null, 2);
  const shortId = (id) => String(id).slice(0, 17) + '…';

  function when(iso) {
    const date = new Date(iso);
    return Number.isNaN(date.getTime()) ? String(iso) : date.toLocaleString(undefined, { dateStyle: 'medium', timeStyle: 'medium' });
  }

  function until(iso) {
    const seconds = Math.round((new Date(iso).getTime() - Date.now()) / 1000);
    if (!Number.isFinite(seconds)) return '';
    if (seconds <= 0) return ' (passed)';
    return seconds < 120 ? ' (in ' + seconds + ' s)' : ' (in ' + Math.round(seconds / 60) + ' min)';
  }

  /** One call to this service, answered as { status, body }; status 0 when it did not answer. */
  async function api(s, method, path, body) {
    const headers = { authorization: 'Bearer ' + s.key, accept: 'application/json' };
    const init = { method: method, headers: headers, cache: 'no-store', credentials: 'omit' };
    if (body !== undefined) {
      headers['content-type'] = 'application/json';
      init.body = JSON.stringify(body);
    }
    let response;
    try {
      response = await fetch(path, init);
    } catch (_) {
      return { status: 0, body: { code: 'NETWORK', message: 'the approval service did not answer' } };
    }
    let parsed = null;
    try {
      parsed = await response.json();
    } catch (_) {
      parsed = null;
    }
    return { status: response.status, body: parsed };
  }

  function describe(answer) {
    const body = answer.body && typeof answer.body === 'object' ? answer.body : {};
    const message = typeof body.message === 'string' ? body.message : 'unexpected answer';
    return answer.status === 0 ? message : message + ' (' + answer.status + (typeof body.code === 'string' ? ' ' + body.code : '') + ')';
  }

  const listPath = (cursor) => '/v1/approvals?status=pending&limit=' + PAGE_SIZE + (cursor ? '&cursor=' + encodeURIComponent(cursor) : '');

  /** Newest request first, as the API orders them. */
  function newer(a, b) {
    return a.requestedAt !== b.requestedAt ? a.requestedAt > b.requestedAt : a.approvalId > b.approvalId;
  }

  // ---- signing in and out ----

  function showSignInError(message) {
    ui.signInError.textContent = message || '';
    ui.signInError.hidden = !message;
  }

  async function signIn(key) {
    const s = { key: key, cursor: null, cards: new Map(), stream: new AbortController() };
    ui.signInButton.disabled = true;
    ui.signInButton.textContent = 'Signing in…';
    showSignInError('');
    const first = await api(s, 'GET', listPath(null));
    ui.signInButton.disabled = false;
    ui.signInButton.textContent = 'Sign in';
    if (first.status !== 200 || !first.body || !Array.isArray(first.body.items)) {
      sessionStorage.removeItem(KEY_SLOT);
      showSignInError(first.status === 401 ? 'That API key was not accepted. Check it and sign in again.' : 'Could not sign in: ' + describe(first));
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
    setNotice('');
    addPage(s, first.body, true);
    ui.heading.focus();
    listen(s);
  }

  function signOut(message) {
    const s = session;
    session = null;
    if (s) s.stream.abort();
    sessionStorage.removeItem(KEY_SLOT);
    ui.list.replaceChildren();
    ui.decisions.replaceChildren();
    setNotice('');
    ui.inbox.hidden = true;
    ui.session.hidden = true;
    ui.signIn.hidden = false;
    showSignInError(message || '');
    ui.keyInput.focus();
  }

  /** A 401 in the middle of a session: the key was revoked or rotated. */
  function refused(s, answer) {
    if (answer.status !== 401) return false;
    if (s === session) signOut('Your key is no longer accepted. Sign in again.');
    return true;
  }

  // ---- the pending list ----

  function setNotice(message) {
    ui.notice.textContent = message;
    ui.notice.hidden = !message;
  }

  function updateChrome(s) {
    ui.empty.hidden = s.cards.size > 0;
    ui.loadMore.hidden = !s.cursor;
  }

  /** Adds the pending items of a page; "first" reconciles the cards the first page covers. */
  function addPage(s, page, first) {
    const items = page.items.filter((view) => view && view.status === 'pending');
    if (first) {
      const ids = new Set(items.map((view) => view.approvalId));
      const oldest = page.nextCursor ? items[items.length - 1] : null;
      for (const [id, entry] of s.cards) {
        if (!ids.has(id) && !entry.busy && (!oldest || !newer(oldest, entry.view))) removeCard(s, id);
      }
      if (!s.cursor) s.cursor = page.nextCursor || null;
    } else {
      s.cursor = page.nextCursor || null;
    }
    for (const view of items) insertCard(s, view, false);
    updateChrome(s);
  }

  /** Places a card in order; a live arrival older than every card shown waits for "load more". */
  function insertCard(s, view, live) {
    if (s.cards.has(view.approvalId)) return;
    const entry = buildCard(s, view);
    let before = null;
    for (const other of s.cards.values()) {
      if (newer(view, other.view) && (!before || newer(before.view, other.view))) before = other;
    }
    if (live && !before && s.cursor) return;
    s.cards.set(view.approvalId, entry);
    ui.list.insertBefore(entry.node, before ? before.node : null);
    updateChrome(s);
  }

  function removeCard(s, id) {
    const entry = s.cards.get(id);
    if (!entry) return;
    const hadFocus = entry.node.contains(document.activeElement);
    const next = entry.node.nextElementSibling || entry.node.previousElementSibling;
    s.cards.delete(id);
    entry.node.remove();
    updateChrome(s);
    if (hadFocus) (next ? next.querySelector('h3') : ui.heading).focus();
  }

  async function reconcile(s) {
    const answer = await api(s, 'GET', listPath(null));
    if (s !== session || refused(s, answer)) return;
    if (answer.status === 200 && answer.body && Array.isArray(answer.body.items)) addPage(s, answer.body, true);
  }

  async function loadMore(s) {
    if (!s.cursor) return;
    ui.loadMore.disabled = true;
    const answer = await api(s, 'GET', listPath(s.cursor));
    ui.loadMore.disabled = false;
    if (s !== session || refused(s, answer)) return;
    if (answer.status !== 200 || !answer.body || !Array.isArray(answer.body.items)) {
      setNotice('Could not load more: ' + describe(answer));
      return;
    }
    addPage(s, answer.body, false);
  }

  /** Re-reads one approval and drops its card when it is no longer pending. */
  async function refreshOne(s, id) {
    const answer = await api(s, 'GET', '/v1/approvals/' + encodeURIComponent(id));
    if (s !== session || refused(s, answer)) return;
    if (answer.status === 404 || answer.status === 403 || (answer.status === 200 && answer.body && answer.body.status !== 'pending')) removeCard(s, id);
  }

  // ---- one approval ----

  function field(label, value, testid) {
    return [h('dt', { text: label }), h('dd', { testid: testid }, [value])];
  }

  function timeOf(iso, suffix) {
    return h('time', { datetime: iso, text: when(iso) + (suffix || '') });
  }

  function buildCard(s, view) {
    const id = view.approvalId;
    const entry = { view: view, busy: false };
    const requester = view.requester || {};
    const redacted = Array.isArray(view.redactedPaths) ? view.redactedPaths : [];
    const headingId = 'title-' + id;

    const comment = h('textarea', { id: 'comment-' + id, testid: 'comment', rows: 2, maxlength: 2000 });
    const editBox = h('textarea', { id: 'edit-' + id, testid: 'edit-arguments', rows: 8, spellcheck: 'false', 'aria-describedby': 'problems-' + id });
    editBox.value = pretty(view.arguments);
    const problems = h('ul', { id: 'problems-' + id, className: 'problems', testid: 'edit-problems', role: 'alert', hidden: true });
    const error = h('p', { className: 'error', testid: 'card-error', role: 'alert', hidden: true });
    const editor = h('div', { id: 'editor-' + id, className: 'editor', testid: 'editor', hidden: true }, [
      h('label', { for: editBox.id, text: 'Edited arguments (JSON)' }),
      editBox,
      problems,
      h('div', { className: 'actions' }, [
        h('button', { type: 'button', className: 'approve', testid: 'approve-with-edits', text: 'Approve with edits', onclick: () => decide(s, entry, 'approve-with-edits') }),
      ]),
    ]);
    const editToggle = h('button', {
      type: 'button',
      testid: 'edit',
      text: 'Edit',
      'aria-expanded': 'false',
      'aria-controls': editor.id,
      onclick: () => {
        editor.hidden = !editor.hidden;
        editToggle.setAttribute('aria-expanded', String(!editor.hidden));
        if (!editor.hidden) editBox.focus();
      },
    });

    const details = h('dl', { className: 'facts' }, [
      ...field('Tenant', view.tenant, 'tenant'),
      ...field('Requester', String(requester.id) + ' (' + String(requester.role) + ', ' + String(requester.kind) + ')', 'requester'),
      ...field('Reason', view.reason, 'reason'),
      ...field('Requested', timeOf(view.requestedAt), 'requested-at'),
      ...field('Deadline', timeOf(view.deadline, until(view.deadline)), 'deadline'),
      ...field('Redacted', redacted.length > 0 ? redacted.join(', ') : 'nothing', 'redacted-paths'),
      ...(view.quorum && Array.isArray(view.quorum.reviewers)
        ? field('Quorum', view.quorum.required + ' of ' + view.quorum.reviewers.join(', ') + '; ' + (Array.isArray(view.votes) ? view.votes.length : 0) + ' approved so far', 'quorum')
        : []),
    ]);

    const node = h('li', { className: 'card', testid: 'approval', 'data-approval-id': id }, [
      h('article', { 'aria-labelledby': headingId }, [
        h('header', { className: 'card-head' }, [
          h('h3', { id: headingId, testid: 'connector', tabindex: '-1', text: view.connectorId }),
          h('code', { className: 'id', title: id, text: shortId(id) }),
        ]),
        view.toolDescription ? h('p', { className: 'description', testid: 'tool-description', text: view.toolDescription }) : null,
        details,
        h('h4', { text: 'Arguments' }),
        h('pre', { testid: 'arguments' }, [h('code', { text: pretty(view.arguments) })]),
        view.dryRunPreview !== undefined ? h('h4', { text: 'Dry-run preview' }) : null,
        view.dryRunPreview !== undefined ? h('pre', { testid: 'dry-run-preview' }, [h('code', { text: pretty(view.dryRunPreview) })]) : null,
        h('div', { className: 'decide' }, [
          h('label', { for: comment.id, text: 'Comment (optional)' }),
          comment,
          h('div', { className: 'actions' }, [
            h('button', { type: 'button', className: 'approve', testid: 'approve', text: 'Approve', onclick: () => decide(s, entry, 'approve') }),
            h('button', { type: 'button', className: 'deny', testid: 'deny', text: 'Deny', onclick: () => decide(s, entry, 'deny') }),
            editToggle,
          ]),
          editor,
          error,
        ]),
      ]),
    ]);
    return Object.assign(entry, { node: node, comment: comment, editBox: editBox, problems: problems, error: error });
  }

  function showProblems(entry, lines) {
    entry.problems.replaceChildren(...lines.map((parts) => h('li', { testid: 'edit-problem' }, parts)));
    entry.problems.hidden = lines.length === 0;
  }

  function showCardError(entry, message) {
    entry.error.textContent = message;
    entry.error.hidden = !message;
  }

  function setCardBusy(entry, busy) {
    entry.busy = busy;
    entry.node.setAttribute('aria-busy', String(busy));
    for (const control of entry.node.querySelectorAll('button, textarea')) control.disabled = busy;
  }

  function confirmDecision(view, outcome) {
    const words = VERDICT_WORDS[outcome.status] || String(outcome.status);
    const reviewer = outcome.reviewer && outcome.reviewer.id ? ' by ' + outcome.reviewer.id : '';
    setNotice(words + ': ' + view.connectorId + ' (' + shortId(view.approvalId) + ')' + reviewer + '.');
    const item = h('li', { testid: 'decision', 'data-approval-id': view.approvalId, 'data-status': String(outcome.status) }, [
      h('strong', { text: words }),
      ' ' + view.connectorId + ' ',
      h('code', { title: view.approvalId, text: shortId(view.approvalId) }),
      reviewer + ' at ',
      timeOf(outcome.decidedAt || new Date().toISOString()),
    ]);
    ui.decisions.prepend(item);
    while (ui.decisions.children.length > 20) ui.decisions.lastElementChild.remove();
  }

  async function decide(s, entry, verdict) {
    const view = entry.view;
    const body = { verdict: verdict };
    showCardError(entry, '');
    if (verdict === 'approve-with-edits') {
      try {
        body.editedArguments = JSON.parse(entry.editBox.value);
      } catch (e) {
        showProblems(entry, [['The edited arguments are not valid JSON: ' + (e && e.message ? e.message : 'parse error')]]);
        entry.editBox.focus();
        return;
      }
    }
    showProblems(entry, []);
    const comment = entry.comment.value.trim();
    if (comment) body.comment = comment;
    setCardBusy(entry, true);
    const answer = await api(s, 'POST', '/v1/approvals/' + encodeURIComponent(view.approvalId) + '/decision', body);
    if (s !== session) return;
    setCardBusy(entry, false);
    if (refused(s, answer)) return;
    const problems = answer.body && answer.body.details && Array.isArray(answer.body.details.problems) ? answer.body.details.problems : null;
    if (answer.status === 200 && answer.body) {
      removeCard(s, view.approvalId);
      confirmDecision(view, answer.body);
    } else if (answer.status === 202 && answer.body) {
      // Under a quorum: this approval counted, the request stays pending until enough reviewers agree.
      setNotice('Counted your approval of ' + view.connectorId + ' (' + shortId(view.approvalId) + '): ' + answer.body.votes + ' of ' + answer.body.required + ' needed.');
    } else if (answer.status === 409 || answer.status === 410) {
      setNotice('Not applied to ' + view.connectorId + ' (' + shortId(view.approvalId) + '): ' + describe(answer) + '. The list was refreshed.');
      await refreshOne(s, view.approvalId);
      await reconcile(s);
    } else if (answer.status === 422 && problems) {
      showProblems(entry, problems.map((p) => [h('code', { text: String(p.path) }), ' ', h('strong', { text: String(p.keyword) }), ': ' + String(p.message)]));
      entry.editBox.focus();
    } else {
      showCardError(entry, 'Not decided: ' + describe(answer));
    }
  }

  // ---- live changes: server-sent events read with fetch, since they need the bearer header ----

  function setLive(state, text) {
    ui.live.setAttribute('data-state', state);
    ui.live.textContent = text;
  }

  function parseEvent(block) {
    const message = { event: 'message', data: [] };
    for (const line of block.split('\n')) {
      if (line === '' || line.startsWith(':')) continue;
      const colon = line.indexOf(':');
      const name = colon === -1 ? line : line.slice(0, colon);
      let value = colon === -1 ? '' : line.slice(colon + 1);
      if (value.startsWith(' ')) value = value.slice(1);
      if (name === 'event') message.event = value;
      else if (name === 'data') message.data.push(value);
    }
    try {
      return { event: message.event, data: JSON.parse(message.data.join('\n')) };
    } catch (_) {
      return { event: message.event, data: null };
    }
  }

  async function onChange(s, change) {
    if (!change || typeof change.approvalId !== 'string') return;
    const entry = s.cards.get(change.approvalId);
    if (change.status === 'pending') {
      // The stream announces a change as the fold applies it; the database the REST API reads
      // catches up a moment later, so a fresh request may still be a 404 for a few attempts.
      for (let attempt = 1; attempt <= 8 && s === session && !s.cards.has(change.approvalId); attempt += 1) {
        const answer = await api(s, 'GET', '/v1/approvals/' + encodeURIComponent(change.approvalId));
        if (s !== session || refused(s, answer)) return;
        if (answer.status === 200 && answer.body && answer.body.status === 'pending') insertCard(s, answer.body, true);
        if (answer.status !== 404) return;
        await pause(150 * attempt, s.stream.signal);
      }
    } else if (entry && !entry.busy) {
      // Settled elsewhere (another reviewer, an expiry, a withdrawal); a decision of ours answers for itself.
      removeCard(s, change.approvalId);
      setNotice(entry.view.connectorId + ' (' + shortId(change.approvalId) + ') was settled elsewhere: ' + (VERDICT_WORDS[change.status] || String(change.status)) + '.');
    }
  }

  const pause = (ms, signal) =>
    new Promise((resolve) => {
      const timer = setTimeout(resolve, ms);
      signal.addEventListener('abort', () => { clearTimeout(timer); resolve(); }, { once: true });
    });

  async function listen(s) {
    let failures = 0;
    while (s === session) {
      setLive('connecting', 'connecting…');
      try {
        const response = await fetch('/v1/approval-events', {
          headers: { authorization: 'Bearer ' + s.key, accept: 'text/event-stream' },
          cache: 'no-store',
          credentials: 'omit',
          signal: s.stream.signal,
        });
        if (refused(s, response)) return;
        if (response.status !== 200 || !response.body) throw new Error('the event stream answered ' + response.status);
        const reader = response.body.pipeThrough(new TextDecoderStream()).getReader();
        let buffer = '';
        for (;;) {
          const chunk = await reader.read();
          if (chunk.done || s !== session) break;
          buffer = (buffer + chunk.value).replace(/\r\n/g, '\n');
          let end;
          while ((end = buffer.indexOf('\n\n')) !== -1) {
            const message = parseEvent(buffer.slice(0, end));
            buffer = buffer.slice(end + 2);
            if (message.event === 'ready') {
              failures = 0;
              setLive('live', 'live');
              if (message.data && typeof message.data.reviewer === 'string') ui.reviewer.textContent = 'Signed in as ' + message.data.reviewer;
              // Whatever changed while the stream was down (or before it first connected).
              reconcile(s);
            } else if (message.event === 'approval') {
              onChange(s, message.data);
            }
          }
        }
      } catch (_) {
        // A dropped connection or a sign-out; the loop decides which.
      }
      if (s !== session) return;
      failures += 1;
      const delay = Math.round(Math.min(MAX_BACKOFF_MS, 500 * 2 ** failures) * (0.5 + Math.random() / 2));
      setLive('offline', 'reconnecting in ' + Math.ceil(delay / 1000) + ' s');
      await pause(delay, s.stream.signal);
    }
  }

  // ---- start ----

  ui.signInForm.addEventListener('submit', (event) => {
    event.preventDefault();
    const key = ui.keyInput.value.trim();
    if (!key) {
      showSignInError('Paste your reviewer API key.');
      ui.keyInput.focus();
      return;
    }
    signIn(key);
  });
  ui.signOut.addEventListener('click', () => signOut(''));
  ui.loadMore.addEventListener('click', () => {
    if (session) loadMore(session);
  });

  const remembered = sessionStorage.getItem(KEY_SLOT);
  if (remembered) signIn(remembered);
  else ui.keyInput.focus();
})();
`;
