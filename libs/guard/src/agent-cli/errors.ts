import { type ErrorCategory, GatehouseError, type JsonSafe } from '@gatehouse/contracts';

/** Every stable code an agent CLI run can fail with; branch on these, never on `message`. */
export const AGENT_CLI_ERROR_CODES = [
  'AGENT_CLI.SPAWN_FAILED',
  'AGENT_CLI.TIMEOUT',
  'AGENT_CLI.TERMINATION_FAILED',
  'AGENT_CLI.NON_ZERO_EXIT',
  'AGENT_CLI.KILLED_BY_SIGNAL',
  'AGENT_CLI.ABORTED',
  'AGENT_CLI.INPUT_INVALID',
  'AGENT_CLI.OUTPUT_PARSE_FAILED',
] as const;

/** A stable agent CLI failure code. */
export type AgentCliErrorCode = (typeof AGENT_CLI_ERROR_CODES)[number];

/** Why a run was refused or failed, from a fixed vocabulary so no caller text can reach an error. */
export type AgentCliFailureReason =
  | 'input-invalid'
  | 'prompt-missing'
  | 'prompt-empty'
  | 'prompt-too-large'
  | 'nul-byte'
  | 'options-invalid'
  | 'unknown-option'
  | 'option-type'
  | 'option-pattern'
  | 'option-too-large'
  | 'argv-invalid'
  | 'cwd-invalid'
  | 'env-invalid'
  | 'signal-invalid'
  | 'timeout-invalid'
  | 'max-output-invalid'
  | 'kill-grace-invalid'
  | 'platform-unsupported'
  | 'exec-failed'
  | 'exec-result-invalid'
  | 'kill-failed'
  | 'group-still-running'
  | 'runtime-unavailable'
  | 'taskkill-failed'
  | 'parser-failed'
  | 'parser-result-invalid';

/** How a run's process tree is torn down: a POSIX process group, or `taskkill /T /F` on Windows. */
export type AgentCliTerminationMethod = 'process-group' | 'taskkill';

/** Non-secret facts about a failed run. Never the prompt, option values, argv, env, stdout or stderr. */
export interface AgentCliErrorMetadata {
  readonly cliId?: string;
  readonly exitCode?: number | null;
  readonly signal?: string | null;
  readonly durationMs?: number;
  readonly timedOut?: boolean;
  /** Bytes of stdout retained (after the tail cap), not the text. */
  readonly stdoutBytes?: number;
  readonly stderrBytes?: number;
  readonly stdoutTruncated?: boolean;
  readonly stderrTruncated?: boolean;
  /** An errno-style code such as `ENOENT` or `EPERM`. */
  readonly systemCode?: string;
  readonly reason?: AgentCliFailureReason;
  /** Name of a declared option (from the definition, never from the caller) whose value was refused. */
  readonly option?: string;
  /** The tree teardown that was tried, when one was. */
  readonly terminationMethod?: AgentCliTerminationMethod;
}

const MESSAGES: Readonly<Record<AgentCliErrorCode, string>> = {
  'AGENT_CLI.SPAWN_FAILED': 'The agent CLI could not be started',
  'AGENT_CLI.TIMEOUT': 'The agent CLI did not finish before its timeout and was terminated',
  'AGENT_CLI.TERMINATION_FAILED': 'The agent CLI process tree could not be terminated',
  'AGENT_CLI.NON_ZERO_EXIT': 'The agent CLI exited with a non-zero status',
  'AGENT_CLI.KILLED_BY_SIGNAL': 'The agent CLI was killed by a signal',
  'AGENT_CLI.ABORTED': 'The agent CLI run was aborted',
  'AGENT_CLI.INPUT_INVALID': 'The agent CLI input was refused',
  'AGENT_CLI.OUTPUT_PARSE_FAILED': 'The agent CLI output could not be parsed',
};

// A coding agent has side effects, so no failure is retryable by the runner's judgement:
// the caller decides whether running the task again is safe.
const CATEGORIES: Readonly<Record<AgentCliErrorCode, ErrorCategory>> = {
  'AGENT_CLI.SPAWN_FAILED': 'unavailable',
  'AGENT_CLI.TIMEOUT': 'unavailable',
  // A process tree that outlives its deadline is an isolation failure, not a slow dependency.
  'AGENT_CLI.TERMINATION_FAILED': 'security',
  'AGENT_CLI.NON_ZERO_EXIT': 'internal',
  'AGENT_CLI.KILLED_BY_SIGNAL': 'internal',
  'AGENT_CLI.ABORTED': 'internal',
  'AGENT_CLI.INPUT_INVALID': 'validation',
  'AGENT_CLI.OUTPUT_PARSE_FAILED': 'internal',
};

const REASONS: ReadonlySet<string> = new Set<AgentCliFailureReason>([
  'input-invalid',
  'prompt-missing',
  'prompt-empty',
  'prompt-too-large',
  'nul-byte',
  'options-invalid',
  'unknown-option',
  'option-type',
  'option-pattern',
  'option-too-large',
  'argv-invalid',
  'cwd-invalid',
  'env-invalid',
  'signal-invalid',
  'timeout-invalid',
  'max-output-invalid',
  'kill-grace-invalid',
  'platform-unsupported',
  'exec-failed',
  'exec-result-invalid',
  'kill-failed',
  'group-still-running',
  'runtime-unavailable',
  'taskkill-failed',
  'parser-failed',
  'parser-result-invalid',
]);

const CLI_ID = /^[a-z0-9](?:[a-z0-9._-]{0,62}[a-z0-9])?$/;
const OPTION_NAME = /^[a-z][a-zA-Z0-9_]{0,63}$/;
const SIGNAL_NAME = /^SIG[A-Z0-9]{1,16}$/;
const SYSTEM_CODE = /^E[A-Z0-9_]{1,31}$/;

const count = (value: unknown): value is number => typeof value === 'number' && Number.isSafeInteger(value) && value >= 0;

/**
 * Keeps only the known keys with well-formed values. Metadata can be re-wrapped from an injected
 * executor's error, so the shape is enforced here rather than trusted.
 */
function sanitize(metadata: AgentCliErrorMetadata): AgentCliErrorMetadata {
  const out: Record<string, JsonSafe> = {};
  const m = metadata as Record<string, unknown>;
  if (typeof m['cliId'] === 'string' && CLI_ID.test(m['cliId'])) out['cliId'] = m['cliId'];
  if (m['exitCode'] === null || (typeof m['exitCode'] === 'number' && Number.isSafeInteger(m['exitCode']))) out['exitCode'] = m['exitCode'];
  if (m['signal'] === null || (typeof m['signal'] === 'string' && SIGNAL_NAME.test(m['signal']))) out['signal'] = m['signal'];
  if (typeof m['durationMs'] === 'number' && Number.isFinite(m['durationMs']) && m['durationMs'] >= 0) out['durationMs'] = Math.round(m['durationMs']);
  for (const key of ['timedOut', 'stdoutTruncated', 'stderrTruncated'] as const) {
    if (typeof m[key] === 'boolean') out[key] = m[key];
  }
  for (const key of ['stdoutBytes', 'stderrBytes'] as const) {
    if (count(m[key])) out[key] = m[key];
  }
  if (typeof m['systemCode'] === 'string' && SYSTEM_CODE.test(m['systemCode'])) out['systemCode'] = m['systemCode'];
  if (typeof m['reason'] === 'string' && REASONS.has(m['reason'])) out['reason'] = m['reason'];
  if (typeof m['option'] === 'string' && OPTION_NAME.test(m['option'])) out['option'] = m['option'];
  if (m['terminationMethod'] === 'process-group' || m['terminationMethod'] === 'taskkill') out['terminationMethod'] = m['terminationMethod'];
  return Object.freeze(out) as AgentCliErrorMetadata;
}

/**
 * A failed or refused agent CLI run. The message is static per code and `metadata` holds only
 * sanitized facts. There is deliberately no `cause`: Node's spawn errors carry the argv (and so
 * the prompt) in `spawnargs`, and loggers serialize causes.
 */
export class AgentCliError extends GatehouseError {
  declare readonly code: AgentCliErrorCode;
  readonly metadata: AgentCliErrorMetadata;
  readonly cliId: string | undefined;

  constructor(code: AgentCliErrorCode, metadata: AgentCliErrorMetadata = {}) {
    // breakwater's one-argument `new AgentCliError(message)` would make a message the code: refused.
    if (!Object.hasOwn(MESSAGES, code)) throw new TypeError('AgentCliError: the first argument must be one of AGENT_CLI_ERROR_CODES');
    const safe = sanitize(metadata);
    super(code, MESSAGES[code], { category: CATEGORIES[code], retryable: false, details: safe as Record<string, JsonSafe> });
    this.name = 'AgentCliError';
    this.metadata = safe;
    this.cliId = safe.cliId;
  }
}

/** True for an {@link AgentCliError}. */
export function isAgentCliError(value: unknown): value is AgentCliError {
  return value instanceof AgentCliError;
}
