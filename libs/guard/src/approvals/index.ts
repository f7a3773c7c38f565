// @gatehouse/guard/approvals: ask a person through the approvals log and wait for the decision.
export * from './types.js';
export * from './errors.js';
export { createKafkaApprovalGateway, type KafkaApprovalGateway, type KafkaApprovalGatewayOptions, type KafkaApprovalGatewayStats } from './kafka-approval-gateway.js';
export { redactArguments, repeatsRedacted, restoreRedacted, REDACTED, type RedactedArguments } from './redaction.js';
