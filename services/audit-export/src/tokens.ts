/** Injection tokens of the service (strings, never class names). */
export const AUDIT_RUNTIME = 'gatehouse:audit-export-runtime';
export const EXPORT_OPTIONS = 'gatehouse:audit-export-options';
