import { type RequestContext } from '@mastra/core/request-context';
import { type ToolObserve } from '@mastra/core/tools';
import { type JsonValue } from '@gatehouse/contracts';
import { type ApprovalGateway } from '../approvals/types.js';
import { type AuditLogger } from '../audit/audit-logger.js';
import { type EgressGuardedFetch } from './egress/index.js';

/** What a connector does to the world. */
export type SideEffect = 'read' | 'write' | 'destructive' | 'idempotent';
export const SIDE_EFFECTS: readonly SideEffect[] = ['read', 'write', 'destructive', 'idempotent'];

/** The permission manifest: every field is enforced; an unknown field fails at construction. */
export interface PermissionManifest {
  readonly sideEffect: SideEffect;
  /** Hosts the connector may reach: exact names or a leading `*.` wildcard. */
  readonly egress?: readonly string[];
  /** `enforced` (default): traffic goes through `runtime.fetch`; `declaration-only`: it does not, and audits say so. */
  readonly egressEnforcement?: 'enforced' | 'declaration-only';
  readonly requiresApproval?: boolean;
  /** Permission identifiers (`resource:action`) the executing principal must hold. */
  readonly requiredPermissions?: readonly string[];
  /** The connector can simulate (`dryRunExecute`) when the caller asks. */
  readonly dryRun?: boolean;
  /** Calls carry an idempotency key and replay the recorded result. */
  readonly idempotencyKey?: boolean;
  /** Budget such as `10/hour` (second, minute, hour, day). */
  readonly rateLimit?: string;
  /** `fixed-window` (default; may admit close to twice the budget across a boundary) or `sliding-window` (never more than the budget in any window-length interval). */
  readonly rateLimitAlgorithm?: RateLimitAlgorithm;
  /** May run as a Mastra background task (read-only connectors only). */
  readonly background?: boolean;
}

/** The suspension a tool-call or suspension grant is bound to. */
export interface ConnectorApprovalSuspension {
  readonly stepPath: string;
  readonly suspendedAt: string;
  readonly resumeCount: number;
}

interface GrantBase {
  readonly connectorId: string;
  readonly runId: string;
  /**
   * The tenant and the arguments (hex sha-256 of their canonical JSON) the grant is for. A
   * connector honours a grant only for that tenant and those arguments, once
   * (`contextGrants: 'bound'`, the default); `'reusable'` connectors ignore both.
   */
  readonly tenant?: string;
  readonly argumentsHash?: string;
  /** Approval record the grant came from (for the audit trail). */
  readonly approvalId?: string;
  /** Arguments a reviewer approved with edits: the call runs with these instead. */
  readonly editedInput?: JsonValue;
}

/** A structured grant from trusted context. A bare array of connector ids is not a grant. */
export type ConnectorApprovalGrant =
  | (GrantBase & { readonly scope: 'tool-call'; readonly workflowId: string; readonly suspension: ConnectorApprovalSuspension; readonly toolCallId: string })
  | (GrantBase & { readonly scope: 'suspension'; readonly workflowId: string; readonly suspension: ConnectorApprovalSuspension })
  | (GrantBase & { readonly scope: 'run'; readonly workflowId?: string });

/** Where the current leg runs, minted by the trusted runtime. */
export interface ConnectorExecutionIdentity {
  readonly workflowId: string;
  readonly runId: string;
  readonly suspension?: ConnectorApprovalSuspension;
}

/** The permissions the executing principal holds, projected by trusted host code. */
export interface PrincipalPermissions {
  readonly principalId: string;
  readonly permissions: readonly string[];
  /** Version of the policy snapshot the permissions came from (breakwater's field), for correlation. */
  readonly policyVersion?: string;
}

/** What the gate knows about one call, for tool policy evaluators. */
export interface ToolCallContext {
  readonly connectorId: string;
  readonly manifest: PermissionManifest;
  readonly entryPoint: 'agent' | 'workflow' | 'direct';
  readonly toolCallId: string | undefined;
  readonly identity: ConnectorExecutionIdentity | undefined;
  readonly isolationScope: string | undefined;
  readonly workflowScope: string | undefined;
  /** True when Mastra runs this call as a background task. */
  readonly background: boolean;
  readonly requestContext: RequestContext | undefined;
}

export type ToolPolicyDecision = { readonly allowed: true } | { readonly allowed: false; readonly code: `CONNECTOR.${string}` };

/** A custom check before execution. Throwing denies (fail closed). */
export interface ToolPolicyEvaluator {
  readonly name: string;
  evaluate(input: unknown, call: ToolCallContext): ToolPolicyDecision | Promise<ToolPolicyDecision>;
}

/** Connector-level policies; like the manifest, an unknown field fails at construction. */
export interface ConnectorPolicies {
  /** Organization allowlist that every declared egress host must fall within. */
  readonly networkEgress?: { readonly allowedDomains: readonly string[]; readonly allowPrivateAddresses?: readonly string[] };
  readonly evaluators?: readonly ToolPolicyEvaluator[];
  /** Destructive connectors need approval unless this is explicitly false. */
  readonly destructiveRequiresApproval?: boolean;
  /** Transport behind `runtime.fetch` (default: global fetch). */
  readonly fetch?: typeof fetch;
}

/** What `execute` receives besides its input. */
export interface ConnectorRuntime {
  /** The only sanctioned way out: checks every request and redirect hop against the manifest. */
  readonly fetch: EgressGuardedFetch;
  readonly signal: AbortSignal | undefined;
  readonly toolCallId: string | undefined;
  readonly requestContext: RequestContext | undefined;
}

export type RateLimitAlgorithm = 'fixed-window' | 'sliding-window';

/** The recorded outcome of an idempotent call. */
export type IdempotencyReservation =
  /** `takenOver`: an earlier holder died mid-execution; its side effect may have happened (reconcile first). */
  | { readonly status: 'reserved'; readonly leaseToken: string; readonly takenOver: boolean }
  | { readonly status: 'completed'; readonly result: JsonValue | undefined }
  | { readonly status: 'pending' }
  | { readonly status: 'ambiguous' };

/**
 * Whose call a store operation is for: the connector passes the tenant of the call it gates (from
 * trusted context), so a durable store can ask its service for that tenant and be refused for
 * one its credential does not cover. Stores in one process may ignore it (the key already
 * scopes the tenant).
 */
export interface StoreScope {
  readonly tenant: string;
}

/** Exactly-once store. The in-memory one is for development; the ledger service provides the durable one. */
export interface IdempotencyStore {
  /** Claims `key` for `holder`, or reports who has it and what they recorded. */
  reserve(key: string, options: { readonly holder: string; readonly pendingTtlMs: number }, scope?: StoreScope): Promise<IdempotencyReservation>;
  /** Records the result; rejects when the lease was lost to a takeover. */
  complete(key: string, leaseToken: string, result: JsonValue | undefined, scope?: StoreScope): Promise<void>;
  /** Frees the key after a failed execution (an ambiguous key stays parked for an operator). */
  fail(key: string, leaseToken: string, failure: { readonly code: string; readonly retryable: boolean }, scope?: StoreScope): Promise<void>;
  /** Records a reconcile answer after a takeover; `already-applied` completes the key with `result`. */
  reconcile(key: string, leaseToken: string, outcome: { readonly outcome: 'already-applied' | 'not-applied'; readonly result?: JsonValue | undefined }, scope?: StoreScope): Promise<void>;
  /**
   * Reads `key` without claiming it (optional). A call that needs a reviewer first looks here:
   * a recorded result replays without asking again, since replaying runs nothing.
   */
  lookup?(key: string, scope?: StoreScope): Promise<IdempotencyLookup>;
}

/** What `lookup` finds: a recorded result, or that there is none to replay. */
export type IdempotencyLookup = { readonly status: 'completed'; readonly result: JsonValue | undefined } | { readonly status: 'absent' | 'pending' | 'ambiguous' };

/** What `reconcile` tells the connector about an earlier, interrupted attempt. */
export type ReconcileOutcome<O> = { readonly outcome: 'already-applied'; readonly result: O } | { readonly outcome: 'not-applied' };

export interface RateLimitDecision {
  readonly allowed: boolean;
  readonly remaining: number;
  /** Epoch ms when the current window ends. */
  readonly resetAt: number;
}

/** Shared budget store. A refused call must consume nothing. */
export interface RateLimitStore {
  consume(key: string, limit: { readonly count: number; readonly windowMs: number; readonly algorithm?: RateLimitAlgorithm }, scope?: StoreScope): Promise<RateLimitDecision>;
}

export interface ConnectorConfig<I, O> {
  readonly id: string;
  readonly description: string;
  readonly inputSchema: import('zod').ZodType<I>;
  readonly outputSchema?: import('zod').ZodType<O>;
  readonly permissions: PermissionManifest;
  readonly policies?: ConnectorPolicies;
  readonly execute: (input: I, context: ConnectorExecuteContext, runtime: ConnectorRuntime) => Promise<O>;
  /** Required when `permissions.dryRun`: what the call would do, without doing it. */
  readonly dryRunExecute?: (input: I, context: ConnectorExecuteContext, runtime: ConnectorRuntime) => Promise<O>;
  readonly audit?: AuditLogger;
  readonly idempotencyStore?: IdempotencyStore;
  readonly rateLimitStore?: RateLimitStore;
  /** How long a reservation stays pending before another process may take it over. Default 900,000 ms. */
  readonly pendingTtlMs?: number;
  /**
   * After a takeover (an earlier holder died mid-execution), checks the outside world: did
   * the side effect already happen? Without it, an ambiguous key waits for an operator.
   */
  readonly reconcile?: (input: I, context: ConnectorExecuteContext, runtime: ConnectorRuntime) => Promise<ReconcileOutcome<O>>;
  /**
   * When the call needs approval and no matching grant is in context, ask a reviewer through
   * the approvals log and wait for the decision (instead of refusing at once).
   */
  readonly approvals?: ConnectorApprovalsConfig;
  /**
   * Also pause the Mastra agent loop for Mastra's own tool approval (`requireApproval`). A
   * Mastra approval never replaces the gatehouse grant: the gate still requires one.
   */
  readonly mastraRequireApproval?: boolean;
  /**
   * How grants from trusted context (`CONNECTOR_GRANTS_CONTEXT_KEY`) count. `'bound'` (default):
   * a grant must name the call's tenant and arguments hash and authorizes one execution in this
   * process (`CONNECTOR.GRANT_UNBOUND` for a grant without them, `CONNECTOR.GRANT_USED` for a
   * second use). `'reusable'`: the first edition's rule, kept as an explicit opt-in: a grant
   * authorizes every matching call of its run, for any tenant and arguments.
   */
  readonly contextGrants?: 'bound' | 'reusable';
}

/** How a connector asks for approval through the log. */
export interface ConnectorApprovalsConfig {
  readonly gateway: ApprovalGateway;
  /** How long a request stays open on the log (its deadline), ms. Default 900,000. */
  readonly deadlineMs?: number;
  /** How long the call waits for a decision, ms. Default `deadlineMs` + 5,000. */
  readonly waitMs?: number;
  /**
   * JSON pointers (`/card/number`; `*` matches every key or index) of argument values a
   * reviewer must not see: replaced on the request's copy and listed in its `redactedPaths`.
   */
  readonly redactPaths?: readonly string[];
  /**
   * `required` approvals from these reviewer ids settle a request (any of them may deny);
   * without it the first reviewer's decision does. Carried on the request, so every fold agrees.
   */
  readonly quorum?: { readonly required: number; readonly reviewers: readonly string[] };
}

/** The subset of Mastra's tool context a connector's execute sees. */
export interface ConnectorExecuteContext {
  readonly requestContext: RequestContext | undefined;
  readonly toolCallId: string | undefined;
  readonly abortSignal: AbortSignal | undefined;
  /** Mastra's observability helper: the loop's own, `invokeConnector`'s `observe`, or `noopObserve`. */
  readonly observe: ToolObserve;
}
