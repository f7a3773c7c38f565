// @gatehouse/guard/hazeljs: the HazelJS agent-gatekeeper API as a facade over gatehouse's
// gatekeeper, audit sinks and approval gateways (docs/migrating/hazeljs.md maps every part).
export { AgentGatekeeper, type AgentGatekeeperOptions, type GatekeeperExecuteInput, type GatekeeperExecuteResult, type GatekeeperSimulation } from './agent-gatekeeper.js';
export { type ToolInvocationContext, type ToolClassification, type ToolRiskLevel, gatekeeperContextOfInvocation } from '@gatehouse/gatekeeper/hazeljs';
export { type HazelGatekeeperDecision, type GatekeeperOutcome } from './decision.js';
export {
  GatekeeperError,
  GatekeeperErrorCodes,
  GatekeeperDeniedError,
  GatekeeperApprovalRequiredError,
  GatekeeperValidationError,
  GatekeeperPolicyError,
  GatekeeperConfigurationError,
  GatekeeperExecutionError,
  type GatekeeperErrorCode,
  type GatekeeperErrorKind,
} from '@gatehouse/gatekeeper/hazeljs';
export { type AgentGatekeeperPolicy, type PolicyEvaluationContext, type PolicyRule, type RuleFunction, type DefaultDecision, DEFAULT_ALLOW_POLICY } from '@gatehouse/gatekeeper/hazeljs';
export { parseGatekeeperConfig, toGatekeeperBundle, type ConvertedConfig } from '@gatehouse/gatekeeper/hazeljs';
export { fromFunction, fromMcpTool, fromHazelTool, fromSkillgate, type ProtectedTool, type SchemaLike, type ToolMeta, type HazelToolLike } from './tools.js';
export { protectMcpInvoke, createToolExecutorGate, type ToolExecutorGateInput, type ToolExecutorGateResult, type ToolExecutorContextFactory, type CreateToolExecutorGateOptions } from './adapters.js';
export { ConsoleAuditSink, InMemoryAuditSink, CompositeAuditSink, createKafkaAuditSink, createOtelAuditSink, createAuditTransportSink, OTEL_NOT_RECORDING } from './audit-sinks.js';
export {
  InMemoryApprovalProvider,
  createKafkaApprovalProvider,
  createRedisApprovalProvider,
  createApprovalStoreProvider,
  createHumanTaskProvider,
  type ApprovalProvider,
  type ApprovalProviderOptions,
  type ApprovalRecord,
  type ApprovalStatus,
  type ApprovalCall,
  type ConsumeResult,
} from './approvals.js';
export { createAgentGatekeeperBundle, bindGatekeeper, formatGatekeeperBootLine } from './refused.js';
