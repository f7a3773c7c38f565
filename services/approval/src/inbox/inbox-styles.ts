/** `GET /inbox/app.css`: the inbox's only style sheet (system fonts, nothing fetched). */
export const INBOX_STYLES = `:root {
  color-scheme: light;
  --ink: #1b1f24;
  --muted: #57606a;
  --line: #d0d7de;
  --panel: #ffffff;
  --page: #f4f6f8;
  --accent: #0b5cad;
  --ok: #1a7f37;
  --bad: #b42318;
  --focus: #f59e0b;
  font: 15px/1.45 system-ui, -apple-system, "Segoe UI", Roboto, sans-serif;
  color: var(--ink);
  background: var(--page);
}
* { box-sizing: border-box; }
[hidden] { display: none !important; }
body { margin: 0; }
.top { display: flex; flex-wrap: wrap; align-items: center; justify-content: space-between; gap: .75rem; padding: .75rem 1.5rem; background: #13233a; color: #fff; }
.top h1 { margin: 0; font-size: 1.15rem; }
.product { font-weight: 400; opacity: .7; margin-left: .4rem; }
.session { display: flex; align-items: center; gap: .75rem; }
.live { font-size: .85rem; padding: .1rem .55rem; border-radius: 999px; background: #4b5563; }
.live[data-state="live"] { background: var(--ok); }
.live[data-state="offline"] { background: var(--bad); }
main { max-width: 60rem; margin: 0 auto; padding: 1.25rem 1.5rem 3rem; }
h2 { font-size: 1.1rem; margin: 1.5rem 0 .75rem; }
h4 { margin: .9rem 0 .3rem; font-size: .9rem; color: var(--muted); }
label { display: block; font-weight: 600; margin: .6rem 0 .25rem; }
input, textarea { width: 100%; font: inherit; padding: .45rem .55rem; border: 1px solid var(--line); border-radius: 6px; background: #fff; color: inherit; }
textarea { font-family: ui-monospace, SFMono-Regular, Menlo, Consolas, monospace; font-size: .85rem; }
button { font: inherit; padding: .4rem .9rem; border-radius: 6px; border: 1px solid var(--line); background: #fff; color: var(--ink); cursor: pointer; }
button:hover:not(:disabled) { filter: brightness(.95); }
button:disabled { opacity: .55; cursor: progress; }
button.primary { background: var(--accent); border-color: var(--accent); color: #fff; }
button.approve { background: var(--ok); border-color: var(--ok); color: #fff; }
button.deny { background: var(--bad); border-color: var(--bad); color: #fff; }
:focus-visible { outline: 3px solid var(--focus); outline-offset: 2px; }
.sign-in { max-width: 28rem; margin: 2rem auto; padding: 1.25rem 1.5rem; background: var(--panel); border: 1px solid var(--line); border-radius: 10px; }
.sign-in h2 { margin-top: 0; }
.sign-in button { margin-top: .75rem; }
.hint, .empty { color: var(--muted); font-size: .9rem; }
.error { color: var(--bad); font-weight: 600; }
.notice { padding: .6rem .9rem; border-radius: 8px; background: #e7f3ea; border: 1px solid #a6d5b2; }
.approvals, .decisions { list-style: none; margin: 0; padding: 0; }
.card { margin: 0 0 1rem; padding: 1rem 1.25rem; background: var(--panel); border: 1px solid var(--line); border-radius: 10px; }
.card[aria-busy="true"] { opacity: .7; }
.card-head { display: flex; align-items: baseline; justify-content: space-between; gap: 1rem; }
.card h3 { margin: 0; font-size: 1.05rem; overflow-wrap: anywhere; }
.id { color: var(--muted); font-size: .8rem; }
.description { margin: .35rem 0 .5rem; color: var(--muted); overflow-wrap: anywhere; }
.facts { display: grid; grid-template-columns: max-content 1fr; gap: .2rem 1rem; margin: .5rem 0; }
.facts dt { color: var(--muted); }
.facts dd { margin: 0; overflow-wrap: anywhere; }
pre { margin: 0; padding: .6rem .75rem; background: #f6f8fa; border: 1px solid var(--line); border-radius: 6px; overflow: auto; max-height: 18rem; font-size: .85rem; }
.actions { display: flex; flex-wrap: wrap; gap: .5rem; margin-top: .6rem; }
.editor { margin-top: .5rem; }
.problems { margin: .5rem 0 0; padding-left: 1.2rem; color: var(--bad); }
.more { display: block; margin: 0 auto; }
.decisions li { padding: .35rem 0; border-bottom: 1px solid var(--line); }
`;
