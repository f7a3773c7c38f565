export * from './scripted-model.js';
export * from '../connector-sdk/testing/index.js';
export { createInMemoryApprovalGateway, type InMemoryApprovalGateway, type InMemoryApprovalGatewayOptions, type ReviewerDecision } from '../approvals/in-memory-approval-gateway.js';
