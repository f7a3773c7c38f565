/** What each key does; the page lists the same keys (`data-testid="shortcuts"`). */
export interface ShortcutActions {
  next(): void;
  previous(): void;
  approve(): void;
  deny(): void;
  edit(): void;
  filter(): void;
}

const KEYS: Readonly<Record<string, keyof ShortcutActions>> = { j: 'next', k: 'previous', a: 'approve', d: 'deny', e: 'edit', '/': 'filter' };

/** Whether a key press belongs to something the reviewer is typing into. */
function typing(target: EventTarget | null): boolean {
  if (!(target instanceof Element)) return false;
  return target.closest('input, textarea, select, [contenteditable]:not([contenteditable="false"])') !== null;
}

/**
 * Single-key shortcuts. They never fire while the reviewer types in a field (a comment with an
 * "a" in it approves nothing), with a modifier held (the browser's own shortcuts), for a held
 * key's repeats, or while an input method composes text.
 */
export function installShortcuts(actions: () => ShortcutActions | null): void {
  document.addEventListener('keydown', (event) => {
    if (event.defaultPrevented || event.repeat || event.isComposing || event.ctrlKey || event.metaKey || event.altKey) return;
    if (typing(event.target)) return;
    const name = Object.hasOwn(KEYS, event.key) ? KEYS[event.key] : undefined;
    const current = actions();
    if (!name || !current) return;
    event.preventDefault();
    current[name]();
  });
}
