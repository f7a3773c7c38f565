// @gatehouse/guard agent-cli: run a non-interactive coding agent CLI (Claude Code, Codex, or a
// custom definition) as a bounded child process. Connectors wrap `buildArgv` + `runAgentCli`.
export { AGENT_CLI_ERROR_CODES, AgentCliError, isAgentCliError } from './errors.js';
export type { AgentCliErrorCode, AgentCliErrorMetadata, AgentCliFailureReason, AgentCliTerminationMethod } from './errors.js';
export { buildArgv, MAX_OPTION_VALUE_BYTES, MAX_PROMPT_BYTES, redactCommand } from './argv.js';
export type { AgentCliDefinition, AgentCliInput, AgentCliOption } from './argv.js';
export { CLAUDE_CODE_CLI, CODEX_CLI, defineAgentCli, parseClaudeCodeEnvelope } from './definitions.js';
export {
  createSpawnAgentCli,
  DEFAULT_KILL_GRACE_MS,
  DEFAULT_MAX_OUTPUT_BYTES,
  DEFAULT_TIMEOUT_MS,
  MAX_OUTPUT_BYTES_LIMIT,
  runAgentCli,
  spawnAgentCli,
} from './run-cli.js';
export type { AgentCliExec, AgentCliExecOutput, AgentCliExecResult, AgentCliExecSpec, AgentCliRunRequest, AgentCliSpawn, SpawnAgentCliOptions } from './run-cli.js';
export {
  type AgentCliConnectorOptions,
  type AgentCliOutput,
  createAgentCliConnector,
  createClaudeCodeConnector,
  createCodexConnector,
} from './agent-cli-connector.js';
