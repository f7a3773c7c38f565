import { type Approval, type Filters } from './api.js';
import { h, say } from './dom.js';

/** The list API's bound on a text filter (`src/list-approvals/list-approvals.ts`). */
const MAX_FILTER_LENGTH = 256;
/** Suggestions kept per field: enough for a reviewer's tenants, bounded whatever agents send. */
const MAX_SUGGESTIONS = 100;

/** The page's elements the filter bar owns. */
export interface FilterElements {
  readonly form: HTMLFormElement;
  readonly tenant: HTMLInputElement;
  readonly connector: HTMLInputElement;
  readonly tenants: HTMLDataListElement;
  readonly connectors: HTMLDataListElement;
  readonly clear: HTMLButtonElement;
  readonly state: HTMLElement;
  readonly error: HTMLElement;
}

const NONE: Filters = { tenant: '', connector: '' };

function describeFilters(filters: Filters): string {
  const parts = [filters.tenant && `tenant “${filters.tenant}”`, filters.connector && `connector “${filters.connector}”`].filter(Boolean);
  return parts.length > 0 ? `Showing only ${parts.join(' and ')}.` : 'Showing every tenant and connector you may review.';
}

/**
 * Filters by tenant and connector (exact names, as the list API matches them), suggested from
 * the approvals seen. Applying them re-reads both lists; the service still limits every read to
 * the reviewer's own tenants and connectors.
 */
export class FilterBar {
  private applied: Filters = NONE;
  private readonly known = { tenant: new Set<string>(), connector: new Set<string>() };

  constructor(
    private readonly ui: FilterElements,
    private readonly onApply: (filters: Filters) => void,
  ) {
    ui.form.addEventListener('submit', (event) => {
      event.preventDefault();
      this.apply({ tenant: ui.tenant.value.trim(), connector: ui.connector.value.trim() });
    });
    ui.clear.addEventListener('click', () => {
      ui.tenant.value = '';
      ui.connector.value = '';
      this.apply(NONE);
    });
  }

  /** The filters the lists show. */
  current(): Filters {
    return this.applied;
  }

  /** Back to no filter and no suggestion (sign-out). */
  reset(): void {
    this.applied = NONE;
    this.ui.tenant.value = '';
    this.ui.connector.value = '';
    this.known.tenant.clear();
    this.known.connector.clear();
    this.ui.tenants.replaceChildren();
    this.ui.connectors.replaceChildren();
    say(this.ui.error, '');
    this.ui.state.textContent = describeFilters(NONE);
  }

  /** Offers an approval's tenant and connector as suggestions. */
  suggest(view: Approval): void {
    this.offer(this.known.tenant, this.ui.tenants, view.tenant);
    this.offer(this.known.connector, this.ui.connectors, view.connectorId);
  }

  focus(): void {
    this.ui.tenant.focus();
  }

  private apply(filters: Filters): void {
    const invalid = [filters.tenant, filters.connector].some((value) => value.length > MAX_FILTER_LENGTH || value.includes('\u0000'));
    if (invalid) {
      say(this.ui.error, `A filter is a tenant or connector name of at most ${MAX_FILTER_LENGTH} characters.`);
      return;
    }
    say(this.ui.error, '');
    this.applied = filters;
    this.ui.state.textContent = describeFilters(filters);
    this.onApply(filters);
  }

  private offer(known: Set<string>, list: HTMLDataListElement, value: string): void {
    if (known.has(value) || known.size >= MAX_SUGGESTIONS) return;
    known.add(value);
    list.append(h('option', { value }));
  }
}
