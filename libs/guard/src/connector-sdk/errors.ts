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
