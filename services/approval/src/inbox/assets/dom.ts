/**
 * DOM helpers of the inbox. Approval requests are written by agents, so every value of one is
 * hostile: it reaches the page only as text (`textContent`, `append(string)`, `value`) or as an
 * attribute value, never as markup. Attribute names come from this code only, never from data.
 */

/** What `h` appends: nodes, strings (as text nodes), and nothing for the empty values. */
export type Child = Node | string | null | undefined | false;

/** An element with properties, attributes and children; `text` sets its text, strings become text nodes. */
export function h<K extends keyof HTMLElementTagNameMap>(
  tag: K,
  props: Readonly<Record<string, unknown>> = {},
  children: readonly Child[] = [],
): HTMLElementTagNameMap[K] {
  const node = document.createElement(tag);
  for (const [name, value] of Object.entries(props)) {
    if (value === undefined || value === null || value === false) continue;
    if (name === 'text') node.textContent = String(value);
    else if (name === 'testid') node.setAttribute('data-testid', String(value));
    else if (name === 'className') node.className = String(value);
    else if (name === 'onclick' && typeof value === 'function') node.addEventListener('click', value as EventListener);
    else node.setAttribute(name, value === true ? '' : String(value));
  }
  for (const child of children) if (child !== null && child !== undefined && child !== false) node.append(child);
  return node;
}

/** The element with this `data-testid` (the page's own markup: its absence is a bug, so it throws). */
export function byTestId<T extends HTMLElement = HTMLElement>(id: string, root: ParentNode = document): T {
  const found = root.querySelector<T>(`[data-testid="${id}"]`);
  if (!found) throw new Error(`the inbox page has no ${id}`);
  return found;
}

/** JSON as the page shows it: indented, whatever the value. */
export const pretty = (value: unknown): string => JSON.stringify(value, null, 2) ?? String(value);

/** An approval id short enough for a line (the whole id is in the title). */
export const shortId = (id: string): string => `${id.slice(0, 17)}…`;

/** A time in the reader's locale; a value that is not a date is shown as it came. */
export function when(iso: string): string {
  const date = new Date(iso);
  return Number.isNaN(date.getTime()) ? String(iso) : date.toLocaleString(undefined, { dateStyle: 'medium', timeStyle: 'medium' });
}

/** How long until a deadline, as a suffix (` (in 40 s)`, ` (passed)`). */
export function until(iso: string): string {
  const seconds = Math.round((new Date(iso).getTime() - Date.now()) / 1000);
  if (!Number.isFinite(seconds)) return '';
  if (seconds <= 0) return ' (passed)';
  return seconds < 120 ? ` (in ${seconds} s)` : ` (in ${Math.round(seconds / 60)} min)`;
}

/** A `<time>` element for an ISO time. */
export function timeOf(iso: string, suffix = ''): HTMLTimeElement {
  return h('time', { datetime: iso, text: when(iso) + suffix });
}

/** Shows a message in an element, hidden while there is none. */
export function say(element: HTMLElement, message: string): void {
  element.textContent = message;
  element.hidden = !message;
}
