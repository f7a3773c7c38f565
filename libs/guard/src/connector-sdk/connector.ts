import { createTool, noopObserve, type Tool, type ToolObserve } from '@mastra/core/tools';
import { RequestContext } from '@mastra/core/request-context';
import { context } from '@opentelemetry/api';
import { canonicalJson, cloneJson, GatehouseError, type JsonValue } from '@gatehouse/contracts';
import { MAX_APPROVAL_WAIT_MS } from '@gatehouse/approvals';
import { z, type ZodType } from 'zod';
import { MAX_TIMER_MS } from '../policy-engine/policies/validation.js';
import { parseRedactPath, redactArguments, repeatsRedacted, restoreRedacted } from '../approvals/redaction.js';
import { type ApprovalGateway, type ApprovalRequestInput, type GrantedApproval } from '../approvals/types.js';
import { type AuditContext } from '../audit/types.js';
import { type AuditLogger } from '../audit/audit-logger.js';
import { type AuditEvent } from '../audit/types.js';
import { auditContextFromRequestContext } from '../context.js';
import { takeApproval } from '../guardrails/approval-budget.js';
import { recordGateDecision } from '../internal/gate-audit.js';
import { startApprovalWait, startToolCall } from '../telemetry/spans.js';
import { type Actor, actorFromRequestContext } from '../rbac/actor.js';
import { GUARDRAIL_APPROVAL_CONTEXT_KEY, ISOLATION_SCOPE_CONTEXT_KEY, IDEMPOTENCY_KEY_CONTEXT_KEY, WORKFLOW_SCOPE_CONTEXT_KEY } from './context-keys.js';
import { EgressDeniedError, egressFetch, type EgressGuardedFetch } from './egress/index.js';
import { egressHookOf, hookedEgressFetch } from './egress/egress-hooks.js';
import { judgeEdit } from './edit-judge.js';
import { sha256Hex } from './digest.js';
import { CONNECTOR_DECISIONS, decisionOf, isConnectorDecisionCode, policyOf } from './decisions.js';
import { ConnectorEvaluatorError, ConnectorPolicyError, ConnectorStoreError, ConnectorValidationError, type ConnectorStoreName, type ConnectorStoreOperation } from './errors.js';
import { type ResolvedManifest, resolveManifest } from './manifest.js';
import { applySingleTenantPreset } from './single-tenant-preset.js';
import { idempotencyStorageKey, rateLimitStorageKey } from './stores/idempotency-key.js';
import { isJsonNative } from './stores/json-native.js';
import { backgroundExecution, networkEgress } from './tool-policies.js';
import { argumentsHashOf, grantMatches, readDryRun, readGrants, readIdentity, readPermissions, readScalar, type Trusted } from './trusted-context.js';
import {
  type ConnectorApprovalsConfig,
  type ConnectorConfig,
  type ConnectorExecuteContext,
  type ConnectorExecutionIdentity,
  type ConnectorRuntime,
  type IdempotencyStore,
  type PermissionManifest,
  type RateLimitStore,
  type ToolCallContext,
  type ToolPolicyEvaluator,
} from './types.js';

/** A Mastra tool built by `createConnector`: its manifest is enforced on every path. */
export type Connector<I = unknown, O = unknown> = Tool<I, O> & { readonly id: string };
/** Any connector, whatever its input and output types (for harnesses and registries). */
export interface AnyConnector {
  readonly id: string;
}

interface Internals {
  readonly id: string;
  readonly resolved: ResolvedManifest;
  readonly inputSchema: ZodType;
  readonly outputSchema: ZodType | undefined;
  readonly evaluators: readonly ToolPolicyEvaluator[];
  readonly execute: ConnectorConfig<unknown, unknown>['execute'];
  readonly dryRunExecute: ConnectorConfig<unknown, unknown>['dryRunExecute'];
  readonly reconcile: ConnectorConfig<unknown, unknown>['reconcile'];
  readonly audit: AuditLogger | undefined;
  readonly idempotencyStore: IdempotencyStore | undefined;
  readonly rateLimitStore: RateLimitStore | undefined;
  readonly pendingTtlMs: number;
  readonly fetch: EgressGuardedFetch;
  readonly description: string;
  readonly approvals: ResolvedApprovals | undefined;
  readonly contextGrants: 'bound' | 'reusable';
  /** Context grants this connector has run on (digests of the grant): each authorizes one execution. */
  readonly usedGrants: Set<string>;
  /** Rate-limit storage keys by tenant: a pure function of tenant and connector id, remembered. */
  readonly rateKeys: Map<string, string>;
  toolExecute?: unknown;
}

/**
 * At most this many used context grants are remembered per connector; past it context grants are
 * refused (fail closed) rather than forgotten, since forgetting one would let it run again.
 */
const MAX_USED_GRANTS = 100_000;
/** At most this many tenants' rate-limit keys are remembered per connector; past it the memo starts over. */
const MAX_RATE_KEYS = 1_024;

/** The storage key of this connector's budget for `tenant`, hashed once per tenant. */
function rateKeyOf(c: Internals, tenant: string): string {
  let key = c.rateKeys.get(tenant);
  if (key === undefined) {
    if (c.rateKeys.size >= MAX_RATE_KEYS) c.rateKeys.clear();
    key = rateLimitStorageKey({ tenant, connectorId: c.id });
    c.rateKeys.set(tenant, key);
  }
  return key;
}

interface ResolvedApprovals {
  readonly gateway: ApprovalGateway;
  readonly deadlineMs: number;
  readonly waitMs: number;
  readonly redactPaths: readonly string[];
  /** JSON Schema of the input, for the reviewer's edits; undefined when zod cannot express it. */
  readonly inputSchema: Record<string, JsonValue> | undefined;
  readonly quorum?: { readonly required: number; readonly reviewers: readonly string[] };
}

const registry = new WeakMap<object, Internals>();
const CONFIG_FIELDS = new Set(['id', 'description', 'inputSchema', 'outputSchema', 'permissions', 'policies', 'execute', 'dryRunExecute', 'reconcile', 'audit', 'idempotencyStore', 'rateLimitStore', 'pendingTtlMs', 'approvals', 'mastraRequireApproval', 'contextGrants']);
const APPROVALS_FIELDS = new Set(['gateway', 'deadlineMs', 'waitMs', 'redactPaths', 'quorum']);
/** A request may stay open at most this long. */
/** Longest a connector's dry run may take to become the reviewer's preview. */
const PREVIEW_TIMEOUT_MS = 5_000;

/** The connector code for a gateway failure; anything unrecognised is "could not confirm". */
function approvalFailureCode(error: unknown): string {
  const code = error instanceof GatehouseError ? error.code : undefined;
  switch (code) {
    case 'APPROVAL.DENIED':
      return 'CONNECTOR.APPROVAL_DENIED';
    case 'APPROVAL.EXPIRED':
      return 'CONNECTOR.APPROVAL_EXPIRED';
    case 'APPROVAL.CANCELLED':
    case 'APPROVAL.ABORTED':
      return 'CONNECTOR.APPROVAL_CANCELLED';
    case 'APPROVAL.TIMEOUT':
      return 'CONNECTOR.APPROVAL_TIMEOUT';
    case 'APPROVAL.REQUEST_INVALID':
      return 'CONNECTOR.APPROVAL_REQUEST_INVALID';
    case 'APPROVAL.USED':
      return 'CONNECTOR.APPROVAL_USED';
    default:
      return 'CONNECTOR.APPROVAL_UNAVAILABLE';
  }
}

function resolveApprovals(id: string, value: ConnectorApprovalsConfig | undefined, inputSchema: ZodType): ResolvedApprovals | undefined {
  if (value === undefined) return undefined;
  const where = `createConnector(${id})`;
  if (value === null || typeof value !== 'object' || Array.isArray(value)) throw new TypeError(`${where}: approvals must be an object`);
  const unknown = Object.keys(value).filter((k) => !APPROVALS_FIELDS.has(k));
  if (unknown.length > 0) throw new TypeError(`${where}: unknown approvals field ${unknown.map((k) => `"${k}"`).join(', ')}`);
  // A connector whose manifest does not require approval may still have a gateway: a guardrail's
  // `approve` verdict parks a call on a person through it (GUARDRAIL_APPROVAL_CONTEXT_KEY).
  if (value.gateway === null || typeof value.gateway !== 'object' || typeof value.gateway.awaitApproval !== 'function') throw new TypeError(`${where}: approvals.gateway must be an ApprovalGateway`);
  const deadlineMs = value.deadlineMs ?? 900_000;
  if (!Number.isSafeInteger(deadlineMs) || deadlineMs < 1 || deadlineMs > MAX_APPROVAL_WAIT_MS) throw new TypeError(`${where}: approvals.deadlineMs must be a positive integer of at most ${MAX_APPROVAL_WAIT_MS}`);
  const waitMs = value.waitMs ?? Math.min(deadlineMs + 5_000, MAX_TIMER_MS);
  if (!Number.isSafeInteger(waitMs) || waitMs < 1 || waitMs > MAX_TIMER_MS) throw new TypeError(`${where}: approvals.waitMs must be a positive integer of at most ${MAX_TIMER_MS}`);
  const redactPaths = value.redactPaths ?? [];
  if (!Array.isArray(redactPaths) || redactPaths.some((p) => parseRedactPath(p) === undefined)) throw new TypeError(`${where}: approvals.redactPaths must be JSON pointers such as /card/number`);
  let jsonSchema: Record<string, JsonValue> | undefined;
  try {
    const converted = z.toJSONSchema(inputSchema) as unknown;
    if (converted !== null && typeof converted === 'object' && !Array.isArray(converted) && isJsonNative(converted)) jsonSchema = converted as Record<string, JsonValue>;
  } catch {
    // Some zod types (transforms, custom refinements) have no JSON Schema: the request goes without one.
  }
  const quorum = value.quorum;
  if (quorum !== undefined) {
    const reviewers = Array.isArray(quorum?.reviewers) ? quorum.reviewers : [];
    const valid = Number.isSafeInteger(quorum?.required) && quorum.required >= 2 && quorum.required <= 10 && reviewers.length <= 50 && reviewers.every((r) => typeof r === 'string' && r.length > 0 && r.length <= 256);
    if (!valid || new Set(reviewers).size !== reviewers.length || quorum.required > reviewers.length) {
      throw new TypeError(`${where}: approvals.quorum needs required (2-10) distinct reviewer ids, at most 50 listed`);
    }
  }
  return Object.freeze({
    gateway: value.gateway,
    deadlineMs,
    waitMs,
    redactPaths: Object.freeze([...redactPaths]),
    inputSchema: jsonSchema,
    ...(quorum && { quorum: Object.freeze({ required: quorum.required, reviewers: Object.freeze([...quorum.reviewers]) }) }),
  });
}

/**
 * The execution an approval belongs to: workflow and run from the trusted execution identity,
 * else the trusted audit run id. Each part is URI-encoded so `a/b`+`c` and `a`+`b/c` differ.
 */
function executionIdOf(identity: ConnectorExecutionIdentity | undefined, context: AuditContext): string | undefined {
  if (identity) return `${encodeURIComponent(identity.workflowId)}/${encodeURIComponent(identity.runId)}`;
  return context.runId === undefined ? undefined : encodeURIComponent(context.runId);
}

/** Who asks: the trusted caller when it is an agent, else the agent of the trusted audit context. */
function requesterOf(actor: Actor | undefined, context: AuditContext, connectorId: string): Required<Actor> {
  if (actor?.kind === 'agent') return Object.freeze({ id: actor.id, role: actor.role, kind: 'agent' });
  const id = context.agentId === undefined ? `connector:${connectorId}` : `agent:${context.agentId}`;
  return Object.freeze({ id: id.slice(0, 256), role: 'agent', kind: 'agent' });
}

/**
 * The result recorded under the call's idempotency key, when the store can say without claiming
 * the key; undefined otherwise (no key, no lookup, nothing recorded, or the store cannot answer:
 * then the call asks as usual and step 6 decides).
 */
async function recordedResult(c: Internals, idempotencyKey: Trusted<string>, tenant: string): Promise<{ result: JsonValue | undefined } | undefined> {
  if (!c.resolved.manifest.idempotencyKey || !c.idempotencyStore?.lookup || idempotencyKey.state !== 'valid') return undefined;
  try {
    const found = await c.idempotencyStore.lookup(idempotencyStorageKey({ tenant, connectorId: c.id, key: idempotencyKey.value }), { tenant });
    return found.status === 'completed' ? { result: found.result } : undefined;
  } catch {
    return undefined;
  }
}

/** The guardrail that parked this call on a person (trusted context), if any. */
function guardrailApprovalOf(rc: unknown): string | undefined {
  const raw = (rc as { get?: (key: string) => unknown } | undefined)?.get?.(GUARDRAIL_APPROVAL_CONTEXT_KEY);
  if (raw === null || typeof raw !== 'object') return undefined;
  const by = (raw as { by?: unknown }).by;
  return typeof by === 'string' && by.length > 0 ? by.slice(0, 128) : undefined;
}

/** The connector's dry run as the reviewer's preview; omitted when it throws, hangs or is not JSON. */
async function dryRunPreview(c: Internals, input: unknown, context: ConnectorExecuteContext, runtime: ConnectorRuntime): Promise<JsonValue | undefined> {
  if (!c.dryRunExecute) return undefined;
  let timer: NodeJS.Timeout | undefined;
  try {
    const preview = await Promise.race([c.dryRunExecute(input, context, runtime), new Promise<undefined>((resolve) => (timer = setTimeout(() => resolve(undefined), PREVIEW_TIMEOUT_MS)))]);
    return preview !== undefined && isJsonNative(preview) ? cloneJson(preview) : undefined;
  } catch {
    return undefined;
  } finally {
    clearTimeout(timer);
  }
}

/** What failed when a refusal is a store or evaluator failure rather than a policy's decision. */
type Failure =
  | { readonly store: ConnectorStoreName; readonly operation: ConnectorStoreOperation; readonly storeCode: string | undefined }
  | { readonly evaluator: string };

/** The code of one of our own errors (a store's `LEDGER.FORBIDDEN`), never a foreign message. */
function gatehouseCodeOf(error: unknown): string | undefined {
  return error instanceof GatehouseError && /^[A-Z_]{1,32}\.[A-Z_]{1,64}$/.test(error.code) ? error.code : undefined;
}

/** The error a refusal throws: typed by what failed, each with a static message and no cause. */
function refusalError(connectorId: string, code: string, reason: string, failure: Failure | undefined): Error {
  if (failure !== undefined && 'store' in failure) return new ConnectorStoreError(connectorId, failure.store, failure.operation, reason, failure.storeCode);
  if (failure !== undefined && code === 'CONNECTOR.POLICY_FAILED') return new ConnectorEvaluatorError(connectorId, failure.evaluator, reason);
  const decision = decisionOf(code);
  return new ConnectorPolicyError(code as `CONNECTOR.${string}`, reason, { connectorId, policy: policyOf(code), category: decision.category, retryable: decision.retryable });
}

interface CallInfo {
  readonly entryPoint: ToolCallContext['entryPoint'];
  readonly requestContext: RequestContext | undefined;
  readonly toolCallId: string | undefined;
  readonly abortSignal: AbortSignal | undefined;
  readonly background: boolean;
  readonly observe: ToolObserve;
}

/**
 * Builds a Mastra tool whose permission manifest is enforced on every path: the agent loop,
 * a workflow step, a nested call and `invokeConnector`. Every decision is audited.
 */
export function createConnector<I, O>(config: ConnectorConfig<I, O>): Connector<I, O> {
  if (config === null || typeof config !== 'object') throw new TypeError('createConnector: config is required');
  const unknown = Object.keys(config).filter((k) => !CONFIG_FIELDS.has(k));
  if (unknown.length > 0) throw new TypeError(`createConnector: unknown config field ${unknown.map((k) => `"${k}"`).join(', ')}`);
  if (typeof config.id !== 'string' || !/^[a-z0-9][a-z0-9._-]{0,127}$/i.test(config.id)) throw new TypeError('createConnector: id must be letters, digits, . _ -');
  if (typeof config.description !== 'string' || config.description.length === 0) throw new TypeError(`createConnector(${config.id}): description is required`);
  if (typeof config.execute !== 'function') throw new TypeError(`createConnector(${config.id}): execute must be a function`);
  if (config.dryRunExecute !== undefined && typeof config.dryRunExecute !== 'function') throw new TypeError(`createConnector(${config.id}): dryRunExecute must be a function`);
  if (config.reconcile !== undefined && typeof config.reconcile !== 'function') throw new TypeError(`createConnector(${config.id}): reconcile must be a function`);
  if (config.reconcile !== undefined && config.permissions?.idempotencyKey !== true) throw new TypeError(`createConnector(${config.id}): reconcile needs permissions.idempotencyKey`);
  if (!config.inputSchema || typeof (config.inputSchema as { safeParse?: unknown }).safeParse !== 'function') throw new TypeError(`createConnector(${config.id}): inputSchema must be a zod schema`);
  if (config.mastraRequireApproval !== undefined && typeof config.mastraRequireApproval !== 'boolean') throw new TypeError(`createConnector(${config.id}): mastraRequireApproval must be a boolean`);
  if (config.contextGrants !== undefined && config.contextGrants !== 'bound' && config.contextGrants !== 'reusable') throw new TypeError(`createConnector(${config.id}): contextGrants must be 'bound' or 'reusable'`);
  // A single-tenant preset as `policies` lends the stores and the audit export, checked against this manifest.
  const preset = applySingleTenantPreset(config.id, config.permissions, config.policies, config);
  const idempotencyStore = preset ? preset.idempotencyStore : config.idempotencyStore;
  const rateLimitStore = preset ? preset.rateLimitStore : config.rateLimitStore;
  const audit = preset ? preset.audit : config.audit;
  const pendingTtlMs = config.pendingTtlMs ?? 900_000;
  if (!Number.isSafeInteger(pendingTtlMs) || pendingTtlMs < 1) throw new TypeError(`createConnector(${config.id}): pendingTtlMs must be a positive integer`);
  const resolved = resolveManifest(config.id, config.permissions, config.policies, {
    dryRunExecute: config.dryRunExecute !== undefined,
    idempotencyStore: idempotencyStore !== undefined,
    rateLimitStore: rateLimitStore !== undefined,
  });
  const approvals = resolveApprovals(config.id, config.approvals, config.inputSchema as ZodType);
  const evaluators: ToolPolicyEvaluator[] = [backgroundExecution()];
  // The evaluator judges the declared hosts; `allowPrivateAddresses` is the egress fetch's (below).
  if (config.policies?.networkEgress) evaluators.push(networkEgress({ allowedDomains: config.policies.networkEgress.allowedDomains }));
  evaluators.push(...(config.policies?.evaluators ?? []));

  const internals: Internals = {
    id: config.id,
    resolved,
    inputSchema: config.inputSchema as ZodType,
    outputSchema: config.outputSchema as ZodType | undefined,
    evaluators: Object.freeze(evaluators),
    execute: config.execute as Internals['execute'],
    dryRunExecute: config.dryRunExecute as Internals['dryRunExecute'],
    reconcile: config.reconcile as Internals['reconcile'],
    audit,
    idempotencyStore,
    rateLimitStore,
    pendingTtlMs,
    description: config.description,
    approvals,
    contextGrants: config.contextGrants ?? 'bound',
    usedGrants: new Set(),
    rateKeys: new Map(),
    fetch: egressFetch({
      allowedHosts: resolved.egress,
      connectorId: config.id,
      ...(config.policies?.fetch ? { fetch: config.policies.fetch } : {}),
      ...(config.policies?.networkEgress?.allowPrivateAddresses ? { allowPrivateAddresses: config.policies.networkEgress.allowPrivateAddresses } : {}),
    }),
  };

  const tool = createTool({
    id: config.id,
    description: config.description,
    inputSchema: config.inputSchema,
    ...(config.outputSchema ? { outputSchema: config.outputSchema } : {}),
    ...(config.mastraRequireApproval ? { requireApproval: true } : {}),
    execute: (async (input: unknown, context: unknown) => {
      const ctx = (context ?? {}) as { requestContext?: unknown; agent?: { toolCallId?: string }; workflow?: unknown; abortSignal?: AbortSignal; background?: unknown; observe?: unknown };
      return runGated(internals, input, {
        entryPoint: ctx.agent ? 'agent' : ctx.workflow ? 'workflow' : 'direct',
        requestContext: ctx.requestContext instanceof RequestContext ? ctx.requestContext : undefined,
        toolCallId: typeof ctx.agent?.toolCallId === 'string' ? ctx.agent.toolCallId : undefined,
        abortSignal: ctx.abortSignal,
        background: ctx.background !== undefined,
        observe: observeOf(ctx.observe) ?? noopObserve,
      });
    }) as never,
  }) as unknown as Connector<I, O>;
  internals.toolExecute = tool.execute;
  // The surface the gate was built for cannot be swapped afterwards.
  for (const key of ['id', 'execute', 'inputSchema', 'outputSchema'] as const) {
    Object.defineProperty(tool, key, { value: (tool as unknown as Record<string, unknown>)[key], writable: false, configurable: false, enumerable: true });
  }
  registry.set(tool, internals);
  return tool;
}

/** The immutable, resolved manifest of a connector (undefined for anything else). */
export function connectorManifest(tool: unknown): PermissionManifest | undefined {
  return tool !== null && typeof tool === 'object' ? registry.get(tool)?.resolved.manifest : undefined;
}

/** True for a connector built with an approvals gateway (a guardrail's `approve` can park a call on it). */
/** Whether `tool` is a connector (made by createConnector). */
export function isConnectorTool(tool: unknown): boolean {
  return tool !== null && typeof tool === 'object' && registry.has(tool);
}

export function connectorHasApprovalGateway(tool: unknown): boolean {
  return tool !== null && typeof tool === 'object' && registry.get(tool)?.approvals !== undefined;
}

/** How a connector's egress is enforced, as its audit events record it. */
export function connectorEgressPosture(tool: unknown): 'enforced' | 'declaration-only' | undefined {
  const manifest = connectorManifest(tool);
  return manifest ? (manifest.egressEnforcement ?? 'enforced') : undefined;
}

export interface ConnectorInvocationOptions {
  readonly requestContext?: RequestContext;
  readonly abortSignal?: AbortSignal;
  readonly toolCallId?: string;
  /** Mastra's observability helper (`span`, `log`) handed to `execute`; default Mastra's `noopObserve`. */
  readonly observe?: ToolObserve;
}

const INVOCATION_OPTIONS = new Set(['requestContext', 'abortSignal', 'toolCallId', 'observe']);

/**
 * A frozen copy of a Mastra `ToolObserve` (its two methods bound once, so a later change to the
 * caller's object changes nothing), or undefined when `value` is not one.
 */
function observeOf(value: unknown): ToolObserve | undefined {
  if (value === null || typeof value !== 'object') return undefined;
  const { span, log } = value as Partial<ToolObserve>;
  if (typeof span !== 'function' || typeof log !== 'function') return undefined;
  return Object.freeze({ span: span.bind(value), log: log.bind(value) });
}

function invocationError(message: string): ConnectorPolicyError {
  return new ConnectorPolicyError('CONNECTOR.INVOCATION_OPTIONS_INVALID', message, { connectorId: 'invoke', policy: 'invocation', category: 'validation' });
}

/**
 * Calls a connector from trusted host or workflow code, through every gate, with schema
 * validation on input and output. Plain tools and altered connectors are refused.
 */
export async function invokeConnector<I, O>(connector: Connector<I, O>, input: I, options: ConnectorInvocationOptions = {}): Promise<O> {
  const internals = connector !== null && typeof connector === 'object' ? registry.get(connector) : undefined;
  if (!internals) {
    throw new ConnectorPolicyError('CONNECTOR.NOT_A_CONNECTOR', 'only tools built by createConnector can be invoked', { connectorId: 'invoke', policy: 'integrity', category: 'integrity' });
  }
  const surface = connector as unknown as Record<string, unknown>;
  if (surface['id'] !== internals.id || surface['execute'] !== internals.toolExecute || surface['inputSchema'] !== internals.inputSchema || surface['outputSchema'] !== internals.outputSchema) {
    throw new ConnectorPolicyError('CONNECTOR.INTEGRITY_VIOLATION', 'the connector changed after construction', { connectorId: internals.id, policy: 'integrity', category: 'integrity' });
  }
  if (options === null || typeof options !== 'object' || Array.isArray(options)) throw invocationError('invocation options must be an object');
  const extra = Object.keys(options).filter((k) => !INVOCATION_OPTIONS.has(k));
  if (extra.length > 0) throw invocationError(`invocation option ${extra.map((k) => `"${k}"`).join(', ')} is not accepted`);
  if (options.requestContext !== undefined && !(options.requestContext instanceof RequestContext)) throw invocationError('requestContext must be a RequestContext');
  if (options.abortSignal !== undefined && !(options.abortSignal instanceof AbortSignal)) throw invocationError('abortSignal must be an AbortSignal');
  if (options.toolCallId !== undefined && (typeof options.toolCallId !== 'string' || options.toolCallId.length === 0)) throw invocationError('toolCallId must be a non-empty string');
  if (options.observe !== undefined && observeOf(options.observe) === undefined) throw invocationError('observe must be a Mastra ToolObserve (span and log functions)');
  const parsed = validate(internals, 'input', input);
  const output = await runGated(internals, parsed, {
    entryPoint: 'direct',
    requestContext: options.requestContext,
    toolCallId: options.toolCallId,
    abortSignal: options.abortSignal,
    background: false,
    observe: options.observe === undefined ? noopObserve : (observeOf(options.observe) as ToolObserve),
  });
  return (internals.outputSchema ? validate(internals, 'output', output) : output) as O;
}

function validate(internals: Internals, phase: 'input' | 'output', value: unknown): unknown {
  const schema = phase === 'input' ? internals.inputSchema : internals.outputSchema;
  if (!schema) return value;
  const result = schema.safeParse(value);
  if (result.success) return result.data;
  throw new ConnectorValidationError(internals.id, phase, result.error.issues.map((i) => i.path.map(String).join('.') || '(root)'));
}

/** The gate in the call's `execute_tool` span: each decision of the call, and its execution, are the span's children. */
async function runGated(c: Internals, input: unknown, call: CallInfo): Promise<unknown> {
  // Read once: the span names the call's tenant and run, the gate records with the same context.
  const auditContext = auditContextFromRequestContext(call.requestContext);
  const span = startToolCall(c.id, call.toolCallId, call.entryPoint, auditContext);
  try {
    const output = await context.with(span.context, () => runGatedCall(c, input, call, auditContext));
    span.end();
    return output;
  } catch (error) {
    // The refusal's stable code, never its message.
    span.end({ code: error instanceof GatehouseError ? error.code : 'CONNECTOR.EXECUTION_FAILED', failed: true });
    throw error;
  }
}

/** How many of `required` the caller does not hold (0: all held). */
function missingPermissions(required: readonly string[], held: readonly string[]): number {
  // A short list is searched; only a long one is worth indexing.
  const index = held.length > 16 ? new Set(held) : undefined;
  let missing = 0;
  for (const permission of required) if (!(index ? index.has(permission) : held.includes(permission))) missing += 1;
  return missing;
}

/** The gate: one evaluation per call, in a fixed order, each decision recorded. */
async function runGatedCall(c: Internals, input: unknown, call: CallInfo, auditContext: AuditContext): Promise<unknown> {
  const started = performance.now();
  // When the gate began to judge its current decision: the call's start, then the grant's arrival.
  let gateStarted = started;
  const rc = call.requestContext;
  const manifest = c.resolved.manifest;
  const actor = actorFromRequestContext(rc);
  const base: Omit<AuditEvent, 'id' | 'timestamp' | 'decision' | 'code' | 'reason'> = {
    boundary: 'tool',
    action: 'tool.execute',
    resource: `connector:${c.id}`,
    context: auditContext,
    ...(actor ? { actor: { ...actor, kind: actor.kind ?? 'human' } } : {}),
  };
  // Once the call has an approval, every later record names it: request, decision and execution correlate.
  let approvalDetail: Record<string, string | boolean> = {};
  const detail = (extra: Record<string, string | number | boolean> = {}) => ({
    ...approvalDetail,
    sideEffect: manifest.sideEffect,
    entryPoint: call.entryPoint,
    egressEnforcement: manifest.egressEnforcement ?? 'enforced',
    ...(call.toolCallId ? { toolCallId: call.toolCallId } : {}),
    durationSeconds: (performance.now() - started) / 1_000,
    ...extra,
  });
  const deny = async (code: string, extra: Record<string, string | number | boolean> = {}, reason = decisionOf(code).reason, failure?: Failure): Promise<never> => {
    await recordGateDecision(c.audit, { ...base, decision: 'denied', code, reason, policy: { name: policyOf(code) }, detail: detail(extra) }, gateStarted);
    throw refusalError(c.id, code, reason, failure);
  };
  const allow = async (code: string, action = 'tool.execute'): Promise<void> => {
    const recorded = await recordGateDecision(c.audit, { ...base, action, decision: code === 'CONNECTOR.DRY_RUN' ? 'observed' : 'allowed', code, reason: decisionOf(code).reason, detail: detail() }, gateStarted);
    // The tool runs only after its decision is on the record where the configuration requires it.
    if (!recorded) await deny('CONNECTOR.AUDIT_UNAVAILABLE');
  };

  // 1. Trusted context: a malformed capability is a refusal, never "absent".
  const identity = readIdentity(rc);
  const grants = readGrants(rc);
  const permissions = readPermissions(rc);
  const isolation = readScalar(rc, ISOLATION_SCOPE_CONTEXT_KEY);
  const workflowScope = readScalar(rc, WORKFLOW_SCOPE_CONTEXT_KEY);
  const dryRun = readDryRun(rc);
  const idempotencyKey = readScalar(rc, IDEMPOTENCY_KEY_CONTEXT_KEY);
  if ([identity, permissions, isolation, workflowScope, dryRun, idempotencyKey].some((t) => t.state === 'invalid')) await deny('CONNECTOR.CONTEXT_INVALID');
  if (grants.state === 'invalid') await deny('CONNECTOR.GRANT_INVALID');
  const identityValue = identity.state === 'valid' ? identity.value : undefined;

  // 2. Tool policies, in order; a throwing evaluator denies.
  const toolCall: ToolCallContext = Object.freeze({
    connectorId: c.id,
    manifest,
    entryPoint: call.entryPoint,
    toolCallId: call.toolCallId,
    identity: identityValue,
    isolationScope: isolation.state === 'valid' ? isolation.value : undefined,
    workflowScope: workflowScope.state === 'valid' ? workflowScope.value : undefined,
    background: call.background,
    requestContext: rc,
  });
  for (const evaluator of c.evaluators) {
    let decision: Awaited<ReturnType<ToolPolicyEvaluator['evaluate']>>;
    try {
      decision = await evaluator.evaluate(input, toolCall);
    } catch {
      return deny('CONNECTOR.POLICY_FAILED', { evaluator: evaluator.name }, undefined, { evaluator: evaluator.name });
    }
    if (decision === null || typeof decision !== 'object' || decision.allowed !== true) {
      const code = decision && decision.allowed === false && /^CONNECTOR\.[A-Z_]+$/.test(decision.code) ? decision.code : 'CONNECTOR.POLICY_FAILED';
      const reason = isConnectorDecisionCode(code) ? CONNECTOR_DECISIONS[code].reason : `refused by tool policy ${evaluator.name}`;
      return deny(code, { evaluator: evaluator.name }, reason, { evaluator: evaluator.name });
    }
  }

  // 3. Required permissions: before dry run and before the grant.
  const required = manifest.requiredPermissions ?? [];
  if (required.length > 0) {
    const held = permissions.state === 'valid' ? permissions.value.permissions : [];
    const version = permissions.state === 'valid' ? permissions.value.policyVersion : undefined;
    const missing = missingPermissions(required, held);
    if (missing > 0) await deny('CONNECTOR.PERMISSION_MISSING', { missing, ...(version === undefined ? {} : { permissionPolicyVersion: version }) });
  }

  const egressHook = egressHookOf(rc);
  const runtime: ConnectorRuntime = Object.freeze({ fetch: egressHook ? hookedEgressFetch(c.fetch, egressHook, c.id) : c.fetch, signal: call.abortSignal, toolCallId: call.toolCallId, requestContext: rc });
  const executeContext: ConnectorExecuteContext = Object.freeze({ requestContext: rc, toolCallId: call.toolCallId, abortSignal: call.abortSignal, observe: call.observe });

  // 4. Dry run: a simulation needs no grant and touches no store.
  if (dryRun.state === 'valid') {
    if (!manifest.dryRun || !c.dryRunExecute) return deny('CONNECTOR.DRY_RUN_UNSUPPORTED');
    await allow('CONNECTOR.DRY_RUN', 'tool.dry-run');
    return c.dryRunExecute(input, executeContext, runtime);
  }

  // 5. Approval: a structured grant that matches this exact call, or a reviewer's decision on
  // the approvals log. A Mastra approval (mastraRequireApproval) is neither: it never counts here.
  const tenant = toolCall.isolationScope ?? base.context.tenant ?? 'default';
  let effectiveInput = input;
  // The grant of a reviewer's decision, used (once) just before the tool runs: after the
  // idempotency gate, so a retry of a call that already ran replays its result instead.
  let grantToUse: { readonly grant: GrantedApproval['grant']; readonly request: ApprovalRequestInput; readonly gateway: ApprovalGateway } | undefined;
  // The digest of a bound context grant, used (once) at the same point.
  let contextGrantToUse: string | undefined;
  const parkedBy = guardrailApprovalOf(rc);
  if (c.resolved.approvalRequired || (parkedBy !== undefined && c.approvals)) {
    const shaped = grants.state === 'valid' ? grants.value.filter((g) => grantMatches(g, { connectorId: c.id, identity: identityValue, toolCallId: call.toolCallId })) : [];
    let grant = shaped[0];
    if (c.contextGrants === 'bound' && shaped.length > 0) {
      // A grant is for one tenant, these arguments, once: one naming neither is the first edition's, refused by name.
      if (shaped.every((g) => g.tenant === undefined || g.argumentsHash === undefined)) return deny('CONNECTOR.GRANT_UNBOUND');
      const argumentsHash = isJsonNative(input) ? argumentsHashOf(input as JsonValue) : undefined;
      grant = shaped.find((g) => g.tenant === tenant && g.argumentsHash === argumentsHash);
      if (grant) contextGrantToUse = sha256Hex(canonicalJson(grant as unknown as JsonValue));
    }
    if (grant) {
      if (grant.approvalId !== undefined) approvalDetail = { approvalId: grant.approvalId };
      if (grant.editedInput !== undefined) {
        const judged = await judgeEdit(rc, validate(c, 'input', grant.editedInput), (value) => c.inputSchema.safeParse(value));
        if (judged.kind !== 'run') return deny(judged.kind === 'refused' ? 'CONNECTOR.APPROVAL_EDIT_REFUSED' : 'CONNECTOR.APPROVAL_EDIT_INVALID');
        effectiveInput = judged.input;
      }
    } else if (!c.approvals) {
      return deny('CONNECTOR.APPROVAL_REQUIRED');
    } else {
      // A call whose result is recorded under its idempotency key replays it (step 6) whatever a
      // reviewer says: ask no one for a call that will run nothing.
      const replay = await recordedResult(c, idempotencyKey, tenant);
      if (replay) {
        await allow('CONNECTOR.REPLAYED', 'tool.replay');
        return cloneJson(replay.result);
      }
      const approvals = c.approvals;
      const executionId = executionIdOf(identityValue, base.context);
      // Without a trusted execution there is no scope to bind a decision to.
      if (executionId === undefined) return deny('CONNECTOR.APPROVAL_REQUIRED');
      if (input === undefined || !isJsonNative(input)) return deny('CONNECTOR.APPROVAL_REQUEST_INVALID');
      // A guarded run's approval budget (Duraton's): past it no reviewer is asked, and the loop ends.
      if (!takeApproval(rc)) return deny('CONNECTOR.APPROVAL_BUDGET');
      const redacted = redactArguments(input, approvals.redactPaths);
      const dryRun = await dryRunPreview(c, input, executeContext, runtime);
      // A preview that echoes a redacted value would undo the redaction: the reviewer goes without it.
      const preview = dryRun !== undefined && repeatsRedacted(dryRun, input, redacted.paths) ? undefined : dryRun;
      // A direct call without a tool call id is one call per run and arguments.
      const request: ApprovalRequestInput = {
        call: { tenant, connectorId: c.id, executionId, toolCallId: call.toolCallId ?? 'direct' },
        arguments: input,
        redactedPaths: redacted.paths,
        ...(approvals.inputSchema === undefined ? {} : { inputSchema: approvals.inputSchema }),
        toolDescription: c.description.slice(0, 2_000),
        ...(preview === undefined ? {} : { dryRunPreview: preview }),
        requester: requesterOf(actor, base.context, c.id),
        ...(actor !== undefined && actor.kind !== 'agent' && { onBehalfOf: Object.freeze({ id: actor.id, role: actor.role, kind: actor.kind ?? 'human' }) }),
        ...(approvals.quorum && { quorum: approvals.quorum }),
        reason: c.resolved.approvalRequired ? (manifest.requiresApproval === true ? 'the connector manifest requires approval' : 'destructive calls require approval') : 'a guardrail requires approval for this call',
        deadline: new Date(Date.now() + approvals.deadlineMs).toISOString(),
        ...(base.context.runId === undefined ? {} : { correlationId: base.context.runId }),
        ...(base.context.traceparent === undefined ? {} : { traceparent: base.context.traceparent }),
      };
      let approvalId: string;
      try {
        approvalId = approvals.gateway.describe(request).approvalId;
      } catch (error) {
        // The agent may not ask for this tenant, or the request is past the bounds: nothing is sent.
        return deny(approvalFailureCode(error));
      }
      approvalDetail = { approvalId };
      const code = 'CONNECTOR.APPROVAL_PENDING';
      const recorded = await recordGateDecision(c.audit, { ...base, action: 'tool.approval', decision: 'approval-required', code, reason: decisionOf(code).reason, policy: { name: 'approval' }, detail: detail() }, gateStarted);
      if (!recorded) return deny('CONNECTOR.AUDIT_UNAVAILABLE');
      // The request carries the wait's span: the approval service, and the decision it appends, continue this trace.
      const wait = startApprovalWait(c.id, call.toolCallId);
      wait.setApprovalId(approvalId);
      const asked: ApprovalRequestInput = wait.traceparent === undefined ? request : { ...request, traceparent: wait.traceparent };
      let granted: GrantedApproval;
      try {
        granted = await context.with(wait.context, () => approvals.gateway.awaitApproval(asked, { timeoutMs: approvals.waitMs, ...(call.abortSignal ? { signal: call.abortSignal } : {}) }));
        if (granted === null || typeof granted !== 'object' || granted.grant?.approvalId !== approvalId) throw new TypeError('grant for another approval');
      } catch (error) {
        wait.end({ code: approvalFailureCode(error) });
        return deny(approvalFailureCode(error));
      }
      wait.end({ code: 'CONNECTOR.APPROVAL_GRANTED' });
      gateStarted = performance.now();
      const edits = granted.grant.editedArguments;
      approvalDetail = { approvalId, approvalPublished: granted.published === true, approvalEdited: edits !== undefined };
      if (edits !== undefined) {
        // The reviewer edited the redacted view: untouched redacted values go back in, then the schema judges.
        const parsed = c.inputSchema.safeParse(restoreRedacted(edits, input, redacted.paths));
        if (!parsed.success) return deny('CONNECTOR.APPROVAL_EDIT_INVALID');
        // The tool-args guardrails judged the proposed call; they judge the reviewer's edit too.
        const judged = await judgeEdit(rc, parsed.data, (value) => c.inputSchema.safeParse(value));
        if (judged.kind !== 'run') return deny(judged.kind === 'refused' ? 'CONNECTOR.APPROVAL_EDIT_REFUSED' : 'CONNECTOR.APPROVAL_EDIT_INVALID');
        effectiveInput = judged.input;
      }
      grantToUse = { grant: granted.grant, request: asked, gateway: approvals.gateway };
      await allow('CONNECTOR.APPROVAL_GRANTED', 'tool.approval');
    }
  }

  // 6. Idempotency: replay a recorded result before spending any budget.
  let lease: { key: string; token: string } | undefined;
  let takenOver = false;
  if (manifest.idempotencyKey && c.idempotencyStore) {
    if (idempotencyKey.state !== 'valid') return deny('CONNECTOR.IDEMPOTENCY_KEY_REQUIRED');
    const key = idempotencyStorageKey({ tenant, connectorId: c.id, key: idempotencyKey.value });
    let reservation;
    try {
      reservation = await c.idempotencyStore.reserve(key, { holder: call.toolCallId ?? 'direct', pendingTtlMs: c.pendingTtlMs }, { tenant });
    } catch (error) {
      return deny('CONNECTOR.IDEMPOTENCY_STORE_FAILED', {}, undefined, { store: 'idempotency', operation: 'reserve', storeCode: gatehouseCodeOf(error) });
    }
    switch (reservation.status) {
      case 'completed':
        await allow('CONNECTOR.REPLAYED', 'tool.replay');
        return cloneJson(reservation.result);
      case 'pending':
        return deny('CONNECTOR.IDEMPOTENCY_PENDING');
      case 'ambiguous':
        return deny('CONNECTOR.IDEMPOTENCY_AMBIGUOUS');
      case 'reserved':
        lease = { key, token: reservation.leaseToken };
        takenOver = reservation.takenOver;
        break;
      default: {
        const exhaustive: never = reservation;
        return exhaustive;
      }
    }
  }
  const release = async (code: string, retryable: boolean) => {
    if (lease && c.idempotencyStore) await c.idempotencyStore.fail(lease.key, lease.token, { code, retryable }, { tenant }).catch(() => undefined);
  };

  // 6b. A takeover inherits an interrupted attempt: ask the outside world before re-running.
  if (lease && c.idempotencyStore && takenOver) {
    if (!c.reconcile) {
      // The key stays parked until an operator decides: never a silent re-run.
      await release('CONNECTOR.IDEMPOTENCY_AMBIGUOUS', false);
      return deny('CONNECTOR.IDEMPOTENCY_AMBIGUOUS');
    }
    let answer: Awaited<ReturnType<NonNullable<Internals['reconcile']>>>;
    try {
      answer = await c.reconcile(effectiveInput, executeContext, runtime);
      if (answer === null || typeof answer !== 'object' || (answer.outcome !== 'already-applied' && answer.outcome !== 'not-applied')) throw new TypeError('bad reconcile answer');
      const outcome = answer.outcome === 'already-applied' ? { outcome: 'already-applied' as const, result: answer.result as JsonValue } : { outcome: 'not-applied' as const };
      await c.idempotencyStore.reconcile(lease.key, lease.token, outcome, { tenant });
    } catch {
      await release('CONNECTOR.RECONCILE_FAILED', false);
      return deny('CONNECTOR.RECONCILE_FAILED');
    }
    if (answer.outcome === 'already-applied') {
      await allow('CONNECTOR.RECONCILED', 'tool.reconcile');
      return answer.result;
    }
  }

  // 6c. The grant is for one execution: used on the log (first use wins across processes, none
  // past its use-by time) before anything spends budget or runs. A used grant never runs again.
  if (grantToUse) {
    try {
      await grantToUse.gateway.useGrant(grantToUse.grant, grantToUse.request);
    } catch (error) {
      const code = approvalFailureCode(error);
      await release(code, false);
      return deny(code);
    }
  }
  if (contextGrantToUse !== undefined) {
    // Checked and marked in one synchronous step: two concurrent calls cannot both pass.
    if (c.usedGrants.has(contextGrantToUse) || c.usedGrants.size >= MAX_USED_GRANTS) {
      await release('CONNECTOR.GRANT_USED', false);
      return deny('CONNECTOR.GRANT_USED');
    }
    c.usedGrants.add(contextGrantToUse);
  }

  // 7. Rate limit: last gate before execution, so a refused call consumes nothing.
  if (c.resolved.rateLimit && c.rateLimitStore) {
    let decision;
    try {
      decision = await c.rateLimitStore.consume(rateKeyOf(c, tenant), c.resolved.rateLimit, { tenant });
      if (decision === null || typeof decision !== 'object' || typeof decision.allowed !== 'boolean') throw new TypeError('bad rate-limit answer');
    } catch (error) {
      await release('CONNECTOR.RATE_LIMIT_STORE_FAILED', true);
      return deny('CONNECTOR.RATE_LIMIT_STORE_FAILED', {}, undefined, { store: 'rate-limit', operation: 'consume', storeCode: gatehouseCodeOf(error) });
    }
    if (!decision.allowed) {
      await release('CONNECTOR.RATE_LIMITED', true);
      return deny('CONNECTOR.RATE_LIMITED', { resetAt: decision.resetAt });
    }
  }

  // 8. Execute. A failure is recorded by code; its message never reaches the audit trail.
  try {
    await allow('CONNECTOR.ALLOWED');
  } catch (error) {
    await release('CONNECTOR.AUDIT_UNAVAILABLE', true);
    throw error;
  }
  let output: unknown;
  try {
    output = await c.execute(effectiveInput, executeContext, runtime);
  } catch (error) {
    await release('CONNECTOR.EXECUTION_FAILED', false);
    // Our own errors carry stable, content-free codes; anything else is just "failed".
    const code = error instanceof GatehouseError ? error.code : 'CONNECTOR.EXECUTION_FAILED';
    // A request runtime.fetch refused is the egress policy deciding, not the connector failing:
    // a SIEM counting denials must see it as one.
    if (error instanceof EgressDeniedError) {
      await recordGateDecision(c.audit, { ...base, decision: 'denied', code, reason: error.message, policy: { name: 'network-egress' }, detail: detail() });
      throw error;
    }
    await recordGateDecision(c.audit, { ...base, decision: 'error', code, reason: decisionOf(isConnectorDecisionCode(code) ? code : 'CONNECTOR.EXECUTION_FAILED').reason, detail: detail() });
    throw error;
  }
  if (lease && c.idempotencyStore && !isJsonNative(output)) {
    // JSON would change this result (a Date, a Map, NaN ...): a replay must not return another
    // type, so nothing is recorded and the key is released. The caller still gets the result.
    await release('CONNECTOR.IDEMPOTENCY_RESULT_NOT_JSON', false);
    await recordGateDecision(c.audit, { ...base, decision: 'error', code: 'CONNECTOR.IDEMPOTENCY_RESULT_NOT_JSON', reason: 'the result is not JSON-native and was not recorded for replay', policy: { name: 'idempotency' }, detail: detail() });
    return output;
  }
  if (lease && c.idempotencyStore) {
    try {
      await c.idempotencyStore.complete(lease.key, lease.token, output as JsonValue | undefined, { tenant });
    } catch (error) {
      // The side effect happened; the record did not. Report it, keep the result.
      const code = error instanceof ConnectorPolicyError ? error.code : 'CONNECTOR.IDEMPOTENCY_STORE_FAILED';
      await recordGateDecision(c.audit, { ...base, decision: 'error', code, reason: 'the result could not be recorded for replay', policy: { name: 'idempotency' }, detail: detail() });
    }
  }
  return output;
}
