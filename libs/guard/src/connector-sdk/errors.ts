import { GatehouseError, type JsonSafe } from '@gatehouse/contracts';

/** Canonical failure classes of the tool boundary, for machine handling. */
export type ConnectorErrorCategory = 'authorization' | 'approval' | 'validation' | 'egress' | 'rate-limit' | 'idempotency' | 'isolation' | 'integrity' | 'unavailable' | 'execution';

/**
 * A tool call refused by a gate. `code` is stable (e.g. `CONNECTOR.APPROVAL_REQUIRED`);
 * the message is static and never carries tool input, output or secrets.
 */
export class ConnectorPolicyError extends GatehouseError {
  readonly connectorId: string;
  readonly policy: string;
  readonly connectorCategory: ConnectorErrorCategory;

  constructor(
    code: `CONNECTOR.${string}`,
    message: string,
    options: { connectorId: string; policy: string; category: ConnectorErrorCategory; retryable?: boolean; details?: Record<string, JsonSafe> },
  ) {
    super(code, message, {
      category: options.category === 'unavailable' ? 'unavailable' : options.category === 'validation' ? 'validation' : 'security',
      retryable: options.retryable ?? false,
      details: { connectorId: options.connectorId, policy: options.policy, category: options.category, ...(options.details ?? {}) },
    });
    this.name = 'ConnectorPolicyError';
    this.connectorId = options.connectorId;
    this.policy = options.policy;
    this.connectorCategory = options.category;
  }
}

/** Input or output that fails the connector's schema. Redacted: field paths only, never values. */
export class ConnectorValidationError extends GatehouseError {
  readonly connectorId: string;
  readonly phase: 'input' | 'output';

  constructor(connectorId: string, phase: 'input' | 'output', fields: readonly string[]) {
    super(phase === 'input' ? 'CONNECTOR.INPUT_INVALID' : 'CONNECTOR.OUTPUT_INVALID', `${connectorId}: ${phase} does not match the connector schema`, {
      category: 'validation',
      retryable: false,
      details: { connectorId, phase, fields: fields.slice(0, 20) },
    });
    this.name = 'ConnectorValidationError';
    this.connectorId = connectorId;
    this.phase = phase;
  }
}

/** Which store a connector call could not reach. */
export type ConnectorStoreName = 'idempotency' | 'rate-limit';
/** The store operation that failed. */
export type ConnectorStoreOperation = 'reserve' | 'consume';

/**
 * A call refused because its idempotency or rate-limit store could not answer before the tool ran
 * (`CONNECTOR.IDEMPOTENCY_STORE_FAILED`, `CONNECTOR.RATE_LIMIT_STORE_FAILED`; retryable). The
 * store's own error is not kept as `cause` (it may name the storage key); only its code, when it
 * is a gatehouse code, is in `details.storeCode`.
 */
export class ConnectorStoreError extends GatehouseError {
  readonly connectorId: string;
  readonly policy: string;
  readonly connectorCategory: ConnectorErrorCategory = 'unavailable';
  readonly store: ConnectorStoreName;
  readonly operation: ConnectorStoreOperation;

  constructor(connectorId: string, store: ConnectorStoreName, operation: ConnectorStoreOperation, message: string, storeCode?: string) {
    const code = store === 'idempotency' ? 'CONNECTOR.IDEMPOTENCY_STORE_FAILED' : 'CONNECTOR.RATE_LIMIT_STORE_FAILED';
    super(code, message, {
      category: 'unavailable',
      retryable: true,
      details: { connectorId, policy: store, category: 'unavailable', store, operation, ...(storeCode === undefined ? {} : { storeCode }) },
    });
    this.name = 'ConnectorStoreError';
    this.connectorId = connectorId;
    this.policy = store;
    this.store = store;
    this.operation = operation;
  }
}

/**
 * A call refused because a tool policy evaluator threw or answered something that is not a
 * decision (`CONNECTOR.POLICY_FAILED`): fail closed. Names the evaluator, never what it threw.
 */
export class ConnectorEvaluatorError extends GatehouseError {
  readonly connectorId: string;
  readonly policy: string;
  readonly connectorCategory: ConnectorErrorCategory = 'authorization';
  readonly evaluator: string;

  constructor(connectorId: string, evaluator: string, message: string) {
    super('CONNECTOR.POLICY_FAILED', message, {
      category: 'security',
      retryable: false,
      details: { connectorId, policy: 'evaluator', category: 'authorization', evaluator: evaluator.slice(0, 128) },
    });
    this.name = 'ConnectorEvaluatorError';
    this.connectorId = connectorId;
    this.policy = 'evaluator';
    this.evaluator = evaluator.slice(0, 128);
  }
}
