// HazelJS's approval provider (create / get / resolve / consume) over gatehouse's approval
// gateways. The trust model is gatehouse's: an approval's id is a function of the call (tenant,
// tool, run, arguments, requester, invocation), so a token grants only the call it was asked for;
// a grant is used once, across processes, before its use-by time (`ApprovalUsed` on the log); only
// a reviewer other than the agent and the user it acts for can decide, and on the Kafka log only
// the approval service's signed decision counts.
import { type JsonValue, readOptions } from '@gatehouse/contracts';
import { createInMemoryApprovalGateway, type InMemoryApprovalGateway } from '../approvals/in-memory-approval-gateway.js';
import { ApprovalGatewayError } from '../approvals/errors.js';
import { type ApprovalGateway, type ApprovalRequestInput } from '../approvals/types.js';
import { configError, GatekeeperError, type ToolInvocationContext, unsupported } from '@gatehouse/gatekeeper/hazeljs';
import { keyPointers, SENSITIVE_KEYS } from './redact.js';

export type ApprovalStatus = 'pending' | 'approved' | 'rejected' | 'expired' | 'consumed' | 'cancelled';

/** What a provider reports of an approval. */
export interface ApprovalRecord {
  readonly approvalId: string;
  readonly status: ApprovalStatus;
  readonly tenantId?: string;
  readonly toolName?: string;
  readonly runId?: string;
}

/** The call an approval is about: the trusted context (with the input to run) and what to redact. */
export interface ApprovalCall {
  readonly context: ToolInvocationContext<JsonValue>;
  /** Input keys shown to the reviewer as `[REDACTED]` (HazelJS's sensitive names always are). */
  readonly redactFields?: readonly string[];
  readonly description?: string;
}

/** The outcome of `consume`: valid once, for this call; `editedInput` when the reviewer edited it. */
export interface ConsumeResult {
  readonly valid: boolean;
  readonly status?: ApprovalStatus;
  readonly editedInput?: JsonValue;
}

/** HazelJS's `ApprovalProvider`, bound to gatehouse's gateways (see the module comment). */
export interface ApprovalProvider {
  /** Finds the approval for this call on the log, or asks for it; waits at most `waitMs` for a decision. */
  create(call: ApprovalCall): Promise<ApprovalRecord>;
  /** The approval as this process's fold holds it. */
  get(approvalId: string): Promise<ApprovalRecord | undefined>;
  /** The reviewer's side: decides (in-memory only; on Kafka a reviewer decides through the approval service). */
  resolve(approvalId: string, status: 'approved' | 'rejected', resolvedBy?: string): Promise<ApprovalRecord | undefined>;
  /** Uses the grant `approvalId` for exactly this call, once, across every process. */
  consume(approvalId: string, call: ApprovalCall): Promise<ConsumeResult>;
}

export interface ApprovalProviderOptions {
  /** How long `create` and `consume` wait for the log and a decision, ms (in-memory default 1, Kafka 5,000). */
  readonly waitMs?: number;
  /** How long a request stays open, ms (HazelJS's default: 300,000). */
  readonly defaultTtlMs?: number;
}

const STATUS_OF_ERROR: Partial<Record<ApprovalGatewayError['code'], ApprovalStatus>> = {
  'APPROVAL.DENIED': 'rejected',
  'APPROVAL.EXPIRED': 'expired',
  'APPROVAL.CANCELLED': 'cancelled',
  'APPROVAL.USED': 'consumed',
  'APPROVAL.TIMEOUT': 'pending',
};

/** A gateway error as a status; the log being unreadable fails closed (HAZELJS.POLICY, retryable). */
function statusOf(error: unknown, approvalId: string): ApprovalStatus {
  if (error instanceof ApprovalGatewayError) {
    const status = STATUS_OF_ERROR[error.code];
    if (status !== undefined) return status;
    if (error.code === 'APPROVAL.REQUEST_INVALID') throw new GatekeeperError('HAZELJS.VALIDATION', 'the call cannot be put to a reviewer (tenant, size or key binding)', { approvalId });
  }
  throw new GatekeeperError('HAZELJS.POLICY', 'the approvals log could not confirm the approval (fail closed)', { approvalId }, error);
}

function readProviderOptions(where: string, value: unknown, waitDefault: number): { waitMs: number; ttlMs: number } {
  let o: Readonly<Record<string, unknown>>;
  try {
    o = readOptions(where, value, ['waitMs', 'defaultTtlMs']);
  } catch (cause) {
    throw configError(cause instanceof Error ? cause.message : `${where}: invalid options`, { field: where });
  }
  const waitMs = o['waitMs'] ?? waitDefault;
  const ttlMs = o['defaultTtlMs'] ?? 300_000;
  for (const [field, n] of [['waitMs', waitMs], ['defaultTtlMs', ttlMs]] as const) {
    if (!Number.isSafeInteger(n) || (n as number) < 1) throw configError(`${where}: ${field} must be a positive integer (ms)`, { field });
  }
  return { waitMs: waitMs as number, ttlMs: ttlMs as number };
}

/** The gateway request for a call: one approval per (tenant, tool, run, arguments, agent, invocation). */
function requestOf(call: ApprovalCall, ttlMs: number): ApprovalRequestInput {
  const c = call.context;
  if (typeof c.tenantId !== 'string' || c.tenantId.length === 0) throw new GatekeeperError('HAZELJS.VALIDATION', 'an approval needs the trusted tenantId', { field: 'tenantId' });
  return {
    call: { tenant: c.tenantId, connectorId: c.toolName, executionId: c.runId, toolCallId: c.idempotencyKey ?? c.invocationId },
    arguments: c.input,
    redactedPaths: keyPointers(c.input, [...SENSITIVE_KEYS, ...(call.redactFields ?? [])]),
    // The agent asks; it and the user it acts for are barred from deciding (self-approval).
    requester: { id: c.agentId, role: 'agent', kind: 'agent' },
    ...(c.delegatedUserId === undefined ? {} : { onBehalfOf: { id: c.delegatedUserId, role: 'delegated-user', kind: 'human' } }),
    reason: 'approval required by policy',
    deadline: new Date(Date.now() + ttlMs).toISOString(),
    correlationId: c.runId,
    ...(call.description === undefined ? {} : { toolDescription: call.description }),
  };
}

function describe(gateway: ApprovalGateway, request: ApprovalRequestInput): string {
  try {
    return gateway.describe(request).approvalId;
  } catch (error) {
    if (error instanceof ApprovalGatewayError && error.code === 'APPROVAL.REQUEST_INVALID') throw new GatekeeperError('HAZELJS.VALIDATION', 'the call cannot be put to a reviewer (tenant, size or key binding)');
    throw new GatekeeperError('HAZELJS.POLICY', 'the approval could not be described (fail closed)', {}, error);
  }
}

/** create / consume over any gateway; `get` and `resolve` are the caller's (in-memory only). */
function overGateway(gateway: ApprovalGateway, waitMs: number, ttlMs: number): Pick<ApprovalProvider, 'create' | 'consume'> {
  const context = (c: ApprovalCall) => ({ tenantId: c.context.tenantId, toolName: c.context.toolName, runId: c.context.runId });
  return {
    async create(call) {
      const request = requestOf(call, ttlMs);
      const approvalId = describe(gateway, request);
      try {
        await gateway.awaitApproval(request, { timeoutMs: waitMs });
        return Object.freeze({ approvalId, status: 'approved' as const, ...context(call) });
      } catch (error) {
        return Object.freeze({ approvalId, status: statusOf(error, approvalId), ...context(call) });
      }
    },
    async consume(approvalId, call) {
      const request = requestOf(call, ttlMs);
      // A token for another call (other arguments, tool, tenant, run or invocation) grants nothing here.
      if (describe(gateway, request) !== approvalId) return Object.freeze({ valid: false });
      try {
        const { grant } = await gateway.awaitApproval(request, { timeoutMs: waitMs });
        await gateway.useGrant(grant, request);
        return Object.freeze({ valid: true, status: 'consumed' as const, ...(grant.editedArguments === undefined ? {} : { editedInput: grant.editedArguments as JsonValue }) });
      } catch (error) {
        return Object.freeze({ valid: false, status: statusOf(error, approvalId) });
      }
    },
  };
}

/**
 * Approvals in process memory, for tests and local demos (not a fleet: each replica has its own).
 * `resolve` is the test reviewer, signing as the in-memory approval service; the fold still refuses
 * a decision by the requesting agent or the user it acts for.
 */
export class InMemoryApprovalProvider implements ApprovalProvider {
  /** The in-memory gateway underneath (its log, and the reviewer's side). */
  readonly gateway: InMemoryApprovalGateway;
  private readonly inner: Pick<ApprovalProvider, 'create' | 'consume'>;

  constructor(opts: ApprovalProviderOptions = {}) {
    const { waitMs, ttlMs } = readProviderOptions('InMemoryApprovalProvider', opts, 1);
    this.gateway = createInMemoryApprovalGateway();
    this.inner = overGateway(this.gateway, waitMs, ttlMs);
  }

  create(call: ApprovalCall): Promise<ApprovalRecord> {
    return this.inner.create(call);
  }

  consume(approvalId: string, call: ApprovalCall): Promise<ConsumeResult> {
    return this.inner.consume(approvalId, call);
  }

  async get(approvalId: string): Promise<ApprovalRecord | undefined> {
    const approval = this.gateway.approval(approvalId);
    if (approval === undefined) return undefined;
    const scope = approval.request.scope;
    const settled = { approved: 'approved', 'approved-with-edits': 'approved', denied: 'rejected', expired: 'expired', cancelled: 'cancelled', pending: 'pending' } as const;
    const used = (approval.status === 'approved' || approval.status === 'approved-with-edits') && approval.usedAt !== undefined;
    return Object.freeze({ approvalId, status: used ? 'consumed' : settled[approval.status], tenantId: scope.tenant, toolName: scope.connectorId, runId: scope.executionId });
  }

  async resolve(approvalId: string, status: 'approved' | 'rejected', resolvedBy = 'user:reviewer'): Promise<ApprovalRecord | undefined> {
    if (status !== 'approved' && status !== 'rejected') throw configError('resolve: status must be approved or rejected', { field: 'status' });
    if (this.gateway.approval(approvalId) === undefined) return undefined;
    const verdict = this.gateway.decide(approvalId, { verdict: status === 'approved' ? 'approve' : 'deny', reviewer: { id: resolvedBy, role: 'approver', kind: 'human' } });
    // The fold's verdict: a decision by the requester (self-approval) or on a settled approval changes nothing.
    if (verdict.kind === 'rejected') throw new GatekeeperError('HAZELJS.APPROVAL_INVALID', 'the decision was refused by the approvals fold', { approvalId, reason: verdict.reason });
    return this.get(approvalId);
  }
}

/**
 * Approvals shared by every replica through the approvals topic: over a `createKafkaApprovalGateway`
 * (one per process). An agent process cannot grant, so `resolve` is refused (a reviewer decides
 * through the approval service) and `get` too (ask the approval service).
 */
export function createKafkaApprovalProvider(gateway: ApprovalGateway, opts: ApprovalProviderOptions = {}): ApprovalProvider {
  if (gateway === null || typeof gateway !== 'object' || typeof gateway.awaitApproval !== 'function' || typeof gateway.useGrant !== 'function') {
    throw configError('createKafkaApprovalProvider needs an approval gateway (createKafkaApprovalGateway)', { field: 'gateway' });
  }
  const { waitMs, ttlMs } = readProviderOptions('createKafkaApprovalProvider', opts, 5_000);
  return Object.freeze({
    ...overGateway(gateway, waitMs, ttlMs),
    get: async (): Promise<never> => {
      throw unsupported('ApprovalProvider.get on the Kafka provider', 'the approval service: GET /v1/approvals/{id}');
    },
    resolve: async (): Promise<never> => {
      throw unsupported('ApprovalProvider.resolve in an agent process', 'a reviewer through the approval service: POST /v1/approvals/{id}/decision (only its signed decision grants)');
    },
  });
}

/** Refused: a Redis record any replica may flip to approved is a grant without a signature. */
export function createRedisApprovalProvider(_redis?: unknown): never {
  throw unsupported('createRedisApprovalProvider', 'createKafkaApprovalProvider(createKafkaApprovalGateway(...)): create / resolve / consume on any replica, decided by the approval service');
}

/** Refused (see `createRedisApprovalProvider`). */
export function createApprovalStoreProvider(_store?: unknown): never {
  throw unsupported('createApprovalStoreProvider', 'createKafkaApprovalProvider(createKafkaApprovalGateway(...))');
}

/** Refused (see `createRedisApprovalProvider`): HazelJS's own docs say its consume is not atomic across replicas. */
export function createHumanTaskProvider(_tasks?: unknown): never {
  throw unsupported('createHumanTaskProvider', 'createKafkaApprovalProvider(createKafkaApprovalGateway(...)): consume is atomic on the log');
}
