import { readOptions } from '@gatehouse/contracts';
import { isAbsolute } from 'node:path';
import { z } from 'zod';
import { type AuditLogger } from '../audit/audit-logger.js';
import { type Connector, createConnector } from '../connector-sdk/connector.js';
import { type ConnectorPolicies, type IdempotencyStore, type PermissionManifest, type RateLimitAlgorithm, type RateLimitStore } from '../connector-sdk/types.js';
import { MAX_TIMER_MS } from '../policy-engine/policies/validation.js';
import { type AgentCliDefinition, buildArgv, redactCommand } from './argv.js';
import { CLAUDE_CODE_CLI, CODEX_CLI, defineAgentCli } from './definitions.js';
import { AgentCliError } from './errors.js';
import { type AgentCliExec, DEFAULT_MAX_OUTPUT_BYTES, DEFAULT_TIMEOUT_MS, MAX_OUTPUT_BYTES_LIMIT, runAgentCli } from './run-cli.js';

export interface AgentCliConnectorOptions {
  /** Workspace from trusted host configuration. When set, `cwd` leaves the model's input schema. */
  readonly cwd?: string;
  /** Default 600,000 ms. */
  readonly timeoutMs?: number;
  /** Tail kept per stream, bytes. Default 1 MiB. */
  readonly maxOutputBytes?: number;
  /** The child's whole environment; default: inherit this process's. */
  readonly env?: NodeJS.ProcessEnv;
  /** Injected process boundary (sandbox, remote worker); default spawns locally. */
  readonly exec?: AgentCliExec;
  readonly audit?: AuditLogger;
  readonly policies?: ConnectorPolicies;
  readonly idempotencyStore?: IdempotencyStore;
  /**
   * Calls carry an idempotency key (`IDEMPOTENCY_KEY_CONTEXT_KEY`) and a repeat replays the recorded
   * result instead of running the CLI again. Needs `idempotencyStore` (or a single-tenant preset's
   * durable store). Default: on exactly when `idempotencyStore` is given.
   */
  readonly idempotencyKey?: boolean;
  /** Must exceed `timeoutMs` when idempotency is used; default `timeoutMs` + 60,000. */
  readonly pendingTtlMs?: number;
  /** Budget such as `10/hour` over `rateLimitStore` (or a single-tenant preset's durable store). */
  readonly rateLimit?: string;
  readonly rateLimitAlgorithm?: RateLimitAlgorithm;
  readonly rateLimitStore?: RateLimitStore;
}

/** What an agent CLI connector returns. `command` is redacted; `text` is the CLI's output. */
export interface AgentCliOutput {
  readonly text: string;
  readonly command: string;
  readonly exitCode: number | null;
  readonly durationMs: number;
  readonly stdoutTruncated: boolean;
  readonly dryRun: boolean;
}

const AGENT_CLI_OUTPUT_SCHEMA: z.ZodType<AgentCliOutput> = z.object({
  text: z.string(),
  command: z.string(),
  exitCode: z.number().int().nullable(),
  durationMs: z.number().nonnegative(),
  stdoutTruncated: z.boolean(),
  dryRun: z.boolean(),
});

const OPTIONS = ['cwd', 'timeoutMs', 'maxOutputBytes', 'env', 'exec', 'audit', 'policies', 'idempotencyStore', 'idempotencyKey', 'pendingTtlMs', 'rateLimit', 'rateLimitAlgorithm', 'rateLimitStore'];

/** The definition's parser applied to a successful run's stdout; its failure says only that it failed. */
function parsedText(cli: AgentCliDefinition, stdout: string): string {
  if (!cli.parseOutput) return stdout;
  let text: unknown;
  try {
    text = cli.parseOutput(stdout);
  } catch {
    throw new AgentCliError('AGENT_CLI.OUTPUT_PARSE_FAILED', { cliId: cli.id, reason: 'parser-failed' });
  }
  if (typeof text !== 'string') throw new AgentCliError('AGENT_CLI.OUTPUT_PARSE_FAILED', { cliId: cli.id, reason: 'parser-result-invalid' });
  return text;
}

/** The manifest's idempotency and rate-limit part, from the connector options. */
function controlsOf(options: AgentCliConnectorOptions, timeoutMs: number): Pick<PermissionManifest, 'idempotencyKey' | 'rateLimit' | 'rateLimitAlgorithm'> & { pendingTtlMs?: number } {
  if (options.idempotencyKey !== undefined && typeof options.idempotencyKey !== 'boolean') throw new TypeError('createAgentCliConnector: idempotencyKey must be a boolean');
  if (options.idempotencyKey === false && options.idempotencyStore) throw new TypeError('createAgentCliConnector: idempotencyStore is given but idempotencyKey is false');
  const idempotent = options.idempotencyKey ?? options.idempotencyStore !== undefined;
  if (!idempotent && options.pendingTtlMs !== undefined) throw new TypeError('createAgentCliConnector: pendingTtlMs without idempotency');
  // A pending reservation that outlives no run: another process could take the key over mid-run and start the CLI again.
  if (idempotent && options.pendingTtlMs !== undefined && (!Number.isSafeInteger(options.pendingTtlMs) || options.pendingTtlMs <= timeoutMs)) {
    throw new TypeError('createAgentCliConnector: pendingTtlMs must be greater than timeoutMs');
  }
  return {
    ...(idempotent ? { idempotencyKey: true, pendingTtlMs: options.pendingTtlMs ?? timeoutMs + 60_000 } : {}),
    ...(options.rateLimit === undefined ? {} : { rateLimit: options.rateLimit }),
    ...(options.rateLimitAlgorithm === undefined ? {} : { rateLimitAlgorithm: options.rateLimitAlgorithm }),
  };
}

function inputSchemaFor(definition: AgentCliDefinition, fixedCwd: boolean) {
  const options: Record<string, z.ZodType> = {};
  for (const [name, option] of Object.entries(definition.options)) options[name] = option.kind === 'boolean' ? z.boolean().optional() : z.string().min(1).max(4096).optional();
  // z.object strips unknown keys: a cwd in the input is dropped when the workspace is fixed.
  return z.object({
    prompt: z.string().min(1),
    ...(fixedCwd ? {} : { cwd: z.string().min(1) }),
    ...options,
  });
}

/**
 * Runs a coding-agent CLI as a write-class, approval-required connector: argv without a
 * shell, the prompt once after `--`, a timeout that ends the whole process tree, bounded
 * output tails, and a redacted command. A dry run previews the command and never spawns.
 */
export function createAgentCliConnector(definition: AgentCliDefinition, options: AgentCliConnectorOptions = {}): Connector<Record<string, unknown>, AgentCliOutput> {
  const cli = defineAgentCli(definition);
  if (options === null || typeof options !== 'object') throw new TypeError('createAgentCliConnector: options must be an object');
  readOptions('createAgentCliConnector', options, OPTIONS);
  if (options.cwd !== undefined && (typeof options.cwd !== 'string' || !isAbsolute(options.cwd))) throw new TypeError('createAgentCliConnector: cwd must be an absolute path');
  const timeoutMs = options.timeoutMs ?? DEFAULT_TIMEOUT_MS;
  if (!Number.isSafeInteger(timeoutMs) || timeoutMs < 1 || timeoutMs > MAX_TIMER_MS) throw new TypeError(`createAgentCliConnector: timeoutMs must be an integer from 1 to ${MAX_TIMER_MS}`);
  // Checked here too, not only when a run starts: a typo must not build a connector that can never run.
  const maxOutputBytes = options.maxOutputBytes ?? DEFAULT_MAX_OUTPUT_BYTES;
  if (!Number.isSafeInteger(maxOutputBytes) || maxOutputBytes < 0 || maxOutputBytes > MAX_OUTPUT_BYTES_LIMIT) throw new TypeError(`createAgentCliConnector: maxOutputBytes must be an integer from 0 to ${MAX_OUTPUT_BYTES_LIMIT}`);
  const { pendingTtlMs, ...controls } = controlsOf(options, timeoutMs);
  const fixedCwd = options.cwd;
  const optionNames = Object.keys(cli.options);
  const argvFor = (input: Record<string, unknown>) =>
    buildArgv(cli, {
      prompt: String(input['prompt']),
      options: Object.fromEntries(optionNames.filter((n) => input[n] !== undefined).map((n) => [n, input[n] as string | boolean])),
    });
  const cwdFor = (input: Record<string, unknown>) => {
    const cwd = fixedCwd ?? String(input['cwd']);
    if (!isAbsolute(cwd)) throw new TypeError('agent CLI cwd must be an absolute path');
    return cwd;
  };

  return createConnector({
    id: cli.id,
    description: `Run the ${cli.id} coding agent on a prompt in a workspace`,
    inputSchema: inputSchemaFor(cli, fixedCwd !== undefined) as unknown as z.ZodType<Record<string, unknown>>,
    outputSchema: AGENT_CLI_OUTPUT_SCHEMA,
    permissions: {
      sideEffect: 'write',
      requiresApproval: true,
      dryRun: true,
      egress: cli.hosts,
      // The child's sockets do not go through runtime.fetch: host firewalls must enforce this.
      egressEnforcement: 'declaration-only',
      ...controls,
    },
    ...(options.policies ? { policies: options.policies } : {}),
    ...(options.audit ? { audit: options.audit } : {}),
    ...(options.idempotencyStore ? { idempotencyStore: options.idempotencyStore } : {}),
    ...(options.rateLimitStore ? { rateLimitStore: options.rateLimitStore } : {}),
    ...(pendingTtlMs === undefined ? {} : { pendingTtlMs }),
    dryRunExecute: async (input): Promise<AgentCliOutput> => {
      const argv = argvFor(input);
      cwdFor(input);
      return { text: '', command: redactCommand(cli.command, argv), exitCode: null, durationMs: 0, stdoutTruncated: false, dryRun: true };
    },
    execute: async (input, _context, runtime): Promise<AgentCliOutput> => {
      const result = await runAgentCli(
        {
          definition: cli,
          argv: argvFor(input),
          cwd: cwdFor(input),
          timeoutMs,
          maxOutputBytes,
          ...(options.env ? { env: options.env } : {}),
          ...(runtime.signal ? { signal: runtime.signal } : {}),
        },
        options.exec,
      );
      return { text: parsedText(cli, result.stdout), command: result.command, exitCode: result.exitCode, durationMs: result.durationMs, stdoutTruncated: result.stdoutTruncated, dryRun: false };
    },
  });
}

/** Claude Code (`claude -p`, accept-edits mode) as an approval-gated connector. */
export function createClaudeCodeConnector(options: AgentCliConnectorOptions = {}): Connector<Record<string, unknown>, AgentCliOutput> {
  return createAgentCliConnector(CLAUDE_CODE_CLI, options);
}

/** Codex (`codex exec`, workspace-write sandbox) as an approval-gated connector. */
export function createCodexConnector(options: AgentCliConnectorOptions = {}): Connector<Record<string, unknown>, AgentCliOutput> {
  return createAgentCliConnector(CODEX_CLI, options);
}

