/** Injection tokens of the ledger module (strings, never class names). */
export const LEDGER_ENGINE = 'gatehouse:ledger-engine';
export const LEDGER_OPTIONS = 'gatehouse:ledger-options';
export const LEDGER_CLOCK = 'gatehouse:ledger-clock';
export const LEDGER_REFUSALS = 'gatehouse:ledger-refusals';
