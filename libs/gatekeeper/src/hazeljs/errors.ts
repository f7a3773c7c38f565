// The facade's one error type. HazelJS throws six classes; gatehouse keeps one coded error per
// area, so `GatekeeperError` is the class and the six HazelJS names are `instanceof` aliases that
// test its `code` (`err instanceof GatekeeperDeniedError` keeps working in migrated code).
import { type ErrorCategory, GatehouseError, type JsonSafe } from '@gatehouse/contracts';

/** The facade's codes under HazelJS's names (HazelJS: `GATEKEEPER_DENIED` ...; here `HAZELJS.DENIED` ...). */
export const GatekeeperErrorCodes = Object.freeze({
  /** A policy (or the default) denied the call. */
  DENIED: 'HAZELJS.DENIED',
  /** A decision's code when no policy applied and the default is deny (the error thrown is DENIED). */
  DEFAULT_DENY: 'HAZELJS.DEFAULT_DENY',
  /** A policy requires a person's approval and none was usable yet: `details.approvalId` names it. */
  APPROVAL_REQUIRED: 'HAZELJS.APPROVAL_REQUIRED',
  /** The `approvalToken` does not grant this call (another call's, denied, expired, used). */
  APPROVAL_INVALID: 'HAZELJS.APPROVAL_INVALID',
  /** The call is malformed (context, tool, input or output schema): refused in every mode. */
  VALIDATION: 'HAZELJS.VALIDATION',
  /** A required audit record or approval check could not be made: failed closed. */
  POLICY: 'HAZELJS.POLICY',
  /** An option, policy or config the facade does not accept (named in `details`). */
  CONFIG: 'HAZELJS.CONFIG',
  /** A HazelJS API gatehouse deliberately does not provide (`details.use` names the equivalent). */
  UNSUPPORTED: 'HAZELJS.UNSUPPORTED',
  /** The tool itself failed (its error is the `cause`, never in the message). */
  EXECUTION: 'HAZELJS.EXECUTION',
});

export type GatekeeperErrorCode = (typeof GatekeeperErrorCodes)[keyof typeof GatekeeperErrorCodes];

const CATEGORY: Readonly<Record<GatekeeperErrorCode, ErrorCategory>> = {
  'HAZELJS.DENIED': 'security',
  'HAZELJS.DEFAULT_DENY': 'security',
  'HAZELJS.APPROVAL_REQUIRED': 'conflict',
  'HAZELJS.APPROVAL_INVALID': 'security',
  'HAZELJS.VALIDATION': 'validation',
  'HAZELJS.POLICY': 'unavailable',
  'HAZELJS.CONFIG': 'validation',
  'HAZELJS.UNSUPPORTED': 'validation',
  'HAZELJS.EXECUTION': 'internal',
};

/**
 * Every error the HazelJS facade throws: a stable `code`, a static message (never the arguments, a
 * rule's or a tool's own words), JSON-safe `details`. `safeDetails` mirrors HazelJS's field.
 */
export class GatekeeperError extends GatehouseError {
  override readonly code: GatekeeperErrorCode;

  constructor(code: GatekeeperErrorCode, message: string, details: Record<string, JsonSafe> = {}, cause?: unknown) {
    super(code, message, { category: CATEGORY[code], retryable: code === 'HAZELJS.POLICY', details, ...(cause === undefined ? {} : { cause }) });
    this.name = 'GatekeeperError';
    this.code = code;
  }

  /** HazelJS's `safeDetails`: the code, the message and the details, all safe to show. */
  get safeDetails(): Record<string, JsonSafe> {
    return { code: this.code, safeMessage: this.message, ...this.details };
  }

  /** HazelJS's `approvalRequestId` (on an approval-required error). */
  get approvalRequestId(): string | undefined {
    const id = this.details['approvalId'];
    return typeof id === 'string' ? id : undefined;
  }
}

/** An `instanceof` target (a function, so `expect(...).toBeInstanceOf` takes it too); calling it throws. */
export interface GatekeeperErrorKind {
  readonly name: string;
  [Symbol.hasInstance](value: unknown): value is GatekeeperError;
}

/** An `instanceof` target that matches a `GatekeeperError` with one of `codes`. */
function errorKind(name: string, codes: readonly GatekeeperErrorCode[]): GatekeeperErrorKind {
  const kind = function (): never {
    throw new TypeError(`${name} tests a GatekeeperError's code; construct a GatekeeperError instead`);
  };
  Object.defineProperty(kind, 'name', { value: name });
  Object.defineProperty(kind, Symbol.hasInstance, { value: (value: unknown) => value instanceof GatekeeperError && codes.includes(value.code) });
  return Object.freeze(kind) as unknown as GatekeeperErrorKind;
}

/** HazelJS's `GatekeeperDeniedError`: a denial, or an approval token that grants nothing. */
export const GatekeeperDeniedError = errorKind('GatekeeperDeniedError', ['HAZELJS.DENIED', 'HAZELJS.APPROVAL_INVALID']);
/** HazelJS's `GatekeeperApprovalRequiredError` (`approvalRequestId` is the approval's id). */
export const GatekeeperApprovalRequiredError = errorKind('GatekeeperApprovalRequiredError', ['HAZELJS.APPROVAL_REQUIRED']);
/** HazelJS's `GatekeeperValidationError`. */
export const GatekeeperValidationError = errorKind('GatekeeperValidationError', ['HAZELJS.VALIDATION']);
/** HazelJS's `GatekeeperPolicyError` (audit or approval back end failed: fail closed). */
export const GatekeeperPolicyError = errorKind('GatekeeperPolicyError', ['HAZELJS.POLICY']);
/** HazelJS's `GatekeeperConfigurationError` (and the facade's refusals of unsupported APIs). */
export const GatekeeperConfigurationError = errorKind('GatekeeperConfigurationError', ['HAZELJS.CONFIG', 'HAZELJS.UNSUPPORTED']);
/** HazelJS's `GatekeeperExecutionError`. */
export const GatekeeperExecutionError = errorKind('GatekeeperExecutionError', ['HAZELJS.EXECUTION']);

/** A configuration refusal naming what was wrong (a key or a path, never a value). */
export function configError(message: string, details: Record<string, JsonSafe> = {}): GatekeeperError {
  return new GatekeeperError('HAZELJS.CONFIG', message, details);
}

/** A refusal of a HazelJS API gatehouse does not provide, naming what to use instead. */
export function unsupported(api: string, use: string): GatekeeperError {
  return new GatekeeperError('HAZELJS.UNSUPPORTED', `${api} is not provided by gatehouse: use ${use}`, { api, use });
}
