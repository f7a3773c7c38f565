import { type FieldChange, sides } from './diff.js';
import { h } from './dom.js';

const KIND_WORDS: Readonly<Record<FieldChange['kind'], string>> = { added: 'added', removed: 'removed', changed: 'changed' };

/** "1 change to the arguments", "2 changes to the arguments". */
export const countOf = (n: number): string => `${n} ${n === 1 ? 'change' : 'changes'} to the arguments`;

/** A table of an edit's changes: field, original value, edited value (every value as text). */
export function changesTable(changes: readonly FieldChange[]): HTMLTableElement {
  const rows = changes.map((change) => {
    const { before, after } = sides(change);
    return h('tr', { testid: 'change', 'data-kind': change.kind, 'data-path': change.path }, [
      h('th', { scope: 'row' }, [
        h('code', { testid: 'change-path', text: change.path || '(the whole value)' }),
        ' ',
        h('span', { className: 'kind', text: KIND_WORDS[change.kind] }),
      ]),
      h('td', { className: 'before', testid: 'change-before' }, [before ? h('del', { text: before }) : '—']),
      h('td', { className: 'after', testid: 'change-after' }, [after ? h('ins', { text: after }) : '—']),
    ]);
  });
  return h('table', { className: 'changes', testid: 'changes' }, [
    h('thead', {}, [h('tr', {}, ['Field', 'Original', 'Edited'].map((title) => h('th', { scope: 'col', text: title })))]),
    h('tbody', {}, rows),
  ]);
}
