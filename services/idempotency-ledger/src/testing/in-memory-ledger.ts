import { applyLedgerEvent, type BudgetState, createLedgerState, type KeyState, type LedgerEvent, type LedgerState, type Verdict } from '@gatehouse/ledger';
import { type Clock, type LedgerPort } from '../engine/ledger-port.js';

/**
 * The ledger port without Kafka, for use-case specs: `decide` applies the event at once with
 * `logTime` as its log time. `beforeDecide` runs first, so a spec can put a competing
 * writer's event on the "log" ahead of the caller's.
 */
export class InMemoryLedger implements LedgerPort, Clock {
  // In process: the spec's events never pass through a log, so none carries a signature.
  readonly state: LedgerState = createLedgerState('in-process');
  readonly appended: LedgerEvent[] = [];
  logTime = 1_000_000;
  wallClock = 1_000_000;
  beforeDecide: ((event: LedgerEvent) => void) | undefined;

  now(): number {
    return this.wallClock;
  }

  key(key: string): KeyState | undefined {
    return this.state.keys.get(key);
  }

  budget(budgetKey: string): BudgetState | undefined {
    return this.state.budgets.get(budgetKey);
  }

  // `decide` applies at once: nothing is ever in flight here.
  openKeys(principal: string): { readonly held: number; readonly share: number } {
    return { held: this.state.openKeysByPrincipal.get(principal) ?? 0, share: 1 };
  }

  budgetsOf(principal: string): { readonly held: number; readonly share: number } {
    return { held: this.state.budgetsByPrincipal.get(principal) ?? 0, share: 1 };
  }

  /** Applies an event as if another writer had appended it. */
  apply(event: LedgerEvent): Verdict {
    this.appended.push(event);
    return applyLedgerEvent(this.state, event, this.logTime);
  }

  async decide(event: LedgerEvent): Promise<Verdict> {
    const hook = this.beforeDecide;
    this.beforeDecide = undefined;
    hook?.(event);
    return this.apply(event);
  }
}
