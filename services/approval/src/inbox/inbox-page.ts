/**
 * `GET /inbox`: the reviewers' page. Static markup only: its script and style are separate
 * same-origin files, so the Content-Security-Policy can forbid every inline script and style.
 */
export const INBOX_PAGE = `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="referrer" content="no-referrer">
<title>Approvals inbox · gatehouse</title>
<link rel="stylesheet" href="/inbox/app.css">
<script src="/inbox/app.js" defer></script>
</head>
<body>
<header class="top">
  <h1>Approvals inbox <span class="product">gatehouse</span></h1>
  <div class="session" data-testid="session" hidden>
    <span data-testid="reviewer">Signed in</span>
    <span class="live" data-testid="live-status" data-state="connecting" role="status">connecting…</span>
    <button type="button" data-testid="sign-out">Sign out</button>
  </div>
</header>
<main>
  <noscript><p class="error">The inbox needs JavaScript.</p></noscript>
  <section class="sign-in" data-testid="sign-in" aria-labelledby="sign-in-title">
    <h2 id="sign-in-title">Sign in</h2>
    <form data-testid="sign-in-form" novalidate>
      <label for="api-key">Reviewer API key</label>
      <input id="api-key" data-testid="api-key" type="password" autocomplete="off" spellcheck="false" required>
      <p class="hint">The key stays in this browser tab and is sent only to this service, as a bearer header.</p>
      <button type="submit" class="primary" data-testid="sign-in-submit">Sign in</button>
      <p class="error" role="alert" data-testid="sign-in-error" hidden></p>
    </form>
  </section>
  <section class="inbox" data-testid="inbox" aria-labelledby="pending-title" hidden>
    <p class="notice" role="status" aria-live="polite" data-testid="notice" hidden></p>
    <h2 id="pending-title" data-testid="pending-heading" tabindex="-1">Pending approvals</h2>
    <p class="empty" data-testid="empty" hidden>Nothing is waiting for a decision.</p>
    <ol class="approvals" data-testid="approval-list"></ol>
    <button type="button" class="more" data-testid="load-more" hidden>Load more</button>
    <h2>Decided in this session</h2>
    <ul class="decisions" data-testid="decisions"></ul>
  </section>
</main>
</body>
</html>
`;
