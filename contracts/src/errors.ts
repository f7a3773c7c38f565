/** Broad classes of failure, used by callers to decide what to do next. */
export type ErrorCategory =
  | 'validation' // bad input: the caller must change something
  | 'conflict' // the log already says otherwise
  | 'unavailable' // a dependency (broker, database) cannot be reached
  | 'security' // a signature, credential or isolation check failed
  | 'internal';

export type JsonSafe = string | number | boolean | null | JsonSafe[] | { [key: string]: JsonSafe };

export interface GatehouseErrorOptions {
  category: ErrorCategory;
  retryable?: boolean;
  details?: Record<string, JsonSafe>;
  cause?: unknown;
}

/**
 * The one thrown error type of gatehouse. `code` is stable (`CONTRACT.UNKNOWN_EVENT_TYPE`);
 * `message` and `details` never carry inspected content, secrets or prompts.
 */
export class GatehouseError extends Error {
  readonly code: string;
  readonly category: ErrorCategory;
  readonly retryable: boolean;
  readonly details: Record<string, JsonSafe>;

  constructor(code: string, message: string, options: GatehouseErrorOptions) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.name = 'GatehouseError';
    this.code = code;
    this.category = options.category;
    this.retryable = options.retryable ?? false;
    this.details = options.details ?? {};
  }

  /** A JSON-safe view for logs and API responses. */
  toJSON(): { code: string; category: ErrorCategory; retryable: boolean; message: string; details: Record<string, JsonSafe> } {
    return { code: this.code, category: this.category, retryable: this.retryable, message: this.message, details: this.details };
  }
}

/** A record on the log (or a value about to be written) does not satisfy its contract. */
export class ContractError extends GatehouseError {
  constructor(code: `CONTRACT.${string}`, message: string, details: Record<string, JsonSafe> = {}) {
    super(code, message, { category: 'validation', retryable: false, details });
    this.name = 'ContractError';
  }
}

export function isGatehouseError(value: unknown): value is GatehouseError {
  return value instanceof GatehouseError;
}
