// Incremental adoption: an MCP invoke function and a tool executor (HazelJS's `authorizationGate`)
// that put every call through `AgentGatekeeper.execute`.
import { readOptions } from '@gatehouse/contracts';
import { randomUUID } from 'node:crypto';
import { type AgentGatekeeper } from './agent-gatekeeper.js';
import { configError, GatekeeperApprovalRequiredError, GatekeeperError, type ToolInvocationContext, type ToolRiskLevel, unsupported } from '@gatehouse/gatekeeper/hazeljs';
import { fromHazelTool, fromMcpTool, type HazelToolLike, type ProtectedTool, type ToolMeta } from './tools.js';

/**
 * Wraps an MCP `invoke(toolName, input)` so every call is decided first. `contextFactory` gives the
 * trusted context of a call (identity from the host, never from `input`); `meta` a tool's metadata.
 */
export function protectMcpInvoke<TInput extends Record<string, unknown>, TOutput>(
  invoke: (toolName: string, input: TInput) => Promise<TOutput>,
  gatekeeper: AgentGatekeeper,
  contextFactory: (toolName: string, input: TInput) => ToolInvocationContext<TInput>,
  meta?: (toolName: string) => ToolMeta<TInput, TOutput>,
): (toolName: string, input: TInput) => Promise<TOutput> {
  if (typeof invoke !== 'function' || typeof contextFactory !== 'function' || (meta !== undefined && typeof meta !== 'function')) {
    throw configError('protectMcpInvoke(invoke, gatekeeper, contextFactory, meta?) takes functions', { field: 'protectMcpInvoke' });
  }
  if (gatekeeper === null || typeof gatekeeper !== 'object' || typeof gatekeeper.execute !== 'function') throw configError('protectMcpInvoke needs an AgentGatekeeper', { field: 'gatekeeper' });
  return async (toolName, input) => {
    const tool = fromMcpTool<TInput, TOutput>({ name: toolName }, invoke, meta?.(toolName));
    const result = await gatekeeper.execute<TInput, TOutput>({ context: contextFactory(toolName, input), tool });
    return result.output;
  };
}

/** What a HazelJS `ToolExecutor` hands its `authorizationGate`. */
export interface ToolExecutorGateInput {
  readonly tool: HazelToolLike & { readonly riskLevel?: ToolRiskLevel };
  readonly input: Record<string, unknown>;
  readonly agentId: string;
  readonly sessionId: string;
  readonly userId?: string;
  readonly runId?: string;
  readonly environment?: string;
  readonly tenantId?: string;
  readonly agentVersion?: string;
  readonly capabilities?: readonly string[];
}

/** What the gate answers: the output, or the error, or a pending approval's id (`requestId`). */
export interface ToolExecutorGateResult {
  readonly success: boolean;
  readonly output?: unknown;
  readonly error?: Error;
  readonly duration: number;
  readonly pendingApproval?: boolean;
  readonly requestId?: string;
  readonly metadata?: Readonly<Record<string, string>>;
}

export type ToolExecutorContextFactory = (input: ToolExecutorGateInput) => ToolInvocationContext | Promise<ToolInvocationContext>;

export interface CreateToolExecutorGateOptions {
  /** The trusted context of a call; give a stable `invocationId` (or `idempotencyKey`) per call to resume it after approval. */
  readonly contextFactory?: ToolExecutorContextFactory;
  readonly defaultTenantId?: string;
  /** Environment when the call names none (HazelJS: `development`). */
  readonly defaultEnvironment?: string;
}

function gateOptions(value: unknown): CreateToolExecutorGateOptions {
  if (typeof value === 'function') return { contextFactory: value as ToolExecutorContextFactory };
  if (value !== null && typeof value === 'object' && 'humanTasks' in value) {
    throw unsupported('createToolExecutorGate({ humanTasks })', 'a contextFactory that sets approvalToken (or a stable invocationId) for a resumed call, with createKafkaApprovalProvider');
  }
  try {
    return readOptions('createToolExecutorGate', value, ['contextFactory', 'defaultTenantId', 'defaultEnvironment']) as CreateToolExecutorGateOptions;
  } catch (cause) {
    throw configError(cause instanceof Error ? cause.message : 'createToolExecutorGate: invalid options', { field: 'options' });
  }
}

/**
 * A HazelJS `authorizationGate` for `ToolExecutor`/`AgentRuntime`: each call becomes `execute` on
 * the gatekeeper; a pending approval answers `pendingApproval` with its id. The default context
 * takes a fresh `invocationId` per call (so a resumed call needs `contextFactory`).
 */
export function createToolExecutorGate(gatekeeper: AgentGatekeeper, contextFactoryOrOptions?: ToolExecutorContextFactory | CreateToolExecutorGateOptions): { execute(input: ToolExecutorGateInput): Promise<ToolExecutorGateResult> } {
  if (gatekeeper === null || typeof gatekeeper !== 'object' || typeof gatekeeper.execute !== 'function') throw configError('createToolExecutorGate needs an AgentGatekeeper', { field: 'gatekeeper' });
  const options = gateOptions(contextFactoryOrOptions);
  const defaultFactory: ToolExecutorContextFactory = (input) => ({
    invocationId: randomUUID(),
    runId: input.runId ?? `run-${input.sessionId}`,
    agentId: input.agentId,
    ...(input.agentVersion === undefined ? {} : { agentVersion: input.agentVersion }),
    ...((input.tenantId ?? options.defaultTenantId) === undefined ? {} : { tenantId: input.tenantId ?? options.defaultTenantId }),
    ...(input.userId === undefined ? {} : { delegatedUserId: input.userId }),
    sessionId: input.sessionId,
    toolName: input.tool.name,
    input: input.input,
    environment: input.environment ?? options.defaultEnvironment ?? 'development',
    timestamp: new Date(),
    ...(input.capabilities === undefined ? {} : { capabilities: input.capabilities }),
  });
  const factory = options.contextFactory ?? defaultFactory;
  return Object.freeze({
    async execute(input: ToolExecutorGateInput): Promise<ToolExecutorGateResult> {
      const started = Date.now();
      try {
        const context = await factory(input);
        const tool: ProtectedTool = fromHazelTool(input.tool);
        const result = await gatekeeper.execute({ context: context as ToolInvocationContext<Record<string, unknown>>, tool });
        return { success: true, output: result.output, duration: Date.now() - started };
      } catch (error) {
        if (error instanceof GatekeeperApprovalRequiredError) {
          return { success: false, pendingApproval: true, requestId: error.approvalRequestId ?? '', duration: Date.now() - started, metadata: { toolName: input.tool.name, ...(input.runId === undefined ? {} : { runId: input.runId }) } };
        }
        return { success: false, error: error instanceof Error ? error : new GatekeeperError('HAZELJS.EXECUTION', 'tool execution failed'), duration: Date.now() - started };
      }
    },
  });
}
