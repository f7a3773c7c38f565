// HazelJS's AgentGatekeeper over gatehouse's gatekeeper: the policies are compiled onto
// `createGatekeeper` (one engine), every decision is recorded through an AuditLogger before the
// tool runs, and approvals go through a gatehouse approval gateway. `auditSink`, `approvalProvider`
// and `defaultDecision` are accepted and honoured here (createGatekeeper refuses them and says so).
import { type JsonValue, readOptions } from '@gatehouse/contracts';
import { assertGatekeeperMode, createGatekeeper, type Gatekeeper, type GatekeeperBundle, type GatekeeperExplanation, type GatekeeperMode } from '@gatehouse/gatekeeper';
import { type AuditSinkLike } from '../audit/sinks.js';
import { type ApprovalProvider } from './approvals.js';
import { AuditLogger, facadeSink } from './audit-record.js';
import { ConsoleAuditSink } from './audit-sinks.js';
import { type ActiveCall, type AgentGatekeeperPolicy, type CompiledHazelPolicies, compileHazelPolicies, configError, type DefaultDecision, gatekeeperContextOf, readInvocationContext, type ToolClassification, type ToolInvocationContext } from '@gatehouse/gatekeeper/hazeljs';
import { hazelDecisionOf, type HazelGatekeeperDecision } from './decision.js';
import { runApproved } from './execute.js';
import { type ProtectedTool } from './tools.js';

export interface AgentGatekeeperOptions {
  /** `enforce` (default), `audit` or `disabled`; anything else is refused, never a fallback. */
  readonly mode?: GatekeeperMode;
  /** `deny` (default): nothing applied, nothing allowed. `allow`: a named catch-all allow (`hazeljs.default-allow`). */
  readonly defaultDecision?: DefaultDecision;
  readonly policies?: readonly AgentGatekeeperPolicy<never>[];
  /** Where every decision is recorded (default: `ConsoleAuditSink`, as HazelJS). */
  readonly auditSink?: AuditSinkLike;
  /** Required in enforce mode when a policy can require approval (no silent in-memory default). */
  readonly approvalProvider?: ApprovalProvider;
  /** `critical` (default: in enforce mode): an audit failure fails the call closed. */
  readonly audit?: { readonly critical?: boolean };
  /** The bundle's policy set id (default `hazeljs`), as decisions and records name it. */
  readonly policySetId?: string;
}

/** HazelJS's `GatekeeperExecuteInput` (the context's input is checked at run time: JSON, as the tool's schema says). */
export interface GatekeeperExecuteInput<TInput = Record<string, unknown>, TOutput = unknown> {
  readonly context: ToolInvocationContext<unknown>;
  readonly tool: ProtectedTool<TInput, TOutput>;
}

/** HazelJS's `GatekeeperExecuteResult`. */
export interface GatekeeperExecuteResult<TOutput = unknown> {
  readonly decision: HazelGatekeeperDecision;
  readonly output: TOutput;
  readonly durationMs: number;
}

/** HazelJS's `GatekeeperSimulation`, without copies of the input (nothing inspected is echoed). */
export interface GatekeeperSimulation {
  readonly decision: HazelGatekeeperDecision;
  readonly matchedPolicies: readonly { readonly id: string; readonly version: string; readonly priority: number }[];
  readonly explanation: readonly string[];
  readonly gatehouse: GatekeeperExplanation;
}

const OPTIONS = ['mode', 'defaultDecision', 'policies', 'auditSink', 'approvalProvider', 'audit', 'policySetId'];
/** HazelJS options gatehouse does not take, and why. */
const REFUSED_OPTIONS: Readonly<Record<string, string>> = {
  clock: 'time comes from the log (approvals) and the event (audit)',
  idGenerator: "an approval's id is derived from the call it grants",
  policyTimeoutMs: 'rules are synchronous: a rule returning a promise denies',
  maxRewritePasses: 'function rewrites are not supported; declarative rewrites take createGatekeeper({ maxRewrites })',
};

function readGatekeeperOptions(value: unknown): Readonly<Record<string, unknown>> {
  if (value !== null && typeof value === 'object') {
    const refused = Object.keys(value).find((key) => key in REFUSED_OPTIONS);
    if (refused !== undefined) throw configError(`AgentGatekeeper: option "${refused}" is not supported: ${REFUSED_OPTIONS[refused]}`, { field: refused });
  }
  try {
    return readOptions('AgentGatekeeper', value, OPTIONS);
  } catch (cause) {
    throw configError(cause instanceof Error ? cause.message : 'AgentGatekeeper: invalid options', { field: 'options' });
  }
}

/**
 * HazelJS's runtime authorization boundary: every tool call authorized before execution, on the
 * gatehouse gatekeeper. Throws HAZELJS.CONFIG at construction for an option, policy or mode it
 * does not take; decisions never throw except as `execute`'s refusals (see `GatekeeperError`).
 */
export class AgentGatekeeper {
  readonly mode: GatekeeperMode;
  readonly defaultDecision: DefaultDecision;
  readonly approvalProvider: ApprovalProvider | undefined;
  /** The gatehouse gatekeeper the policies run on (its `version()`, `explain`, `followPolicyBundles`). */
  readonly gatekeeper: Gatekeeper;
  /** The policies as a gatehouse bundle: data, function rules named as `{ predicate }` (registered here only). */
  readonly bundle: GatekeeperBundle;
  /** The audit logger every record goes through (its `events()` are the last 1,000). */
  readonly audit: AuditLogger;
  readonly auditCritical: boolean;
  private readonly compiled: CompiledHazelPolicies;
  private active: ActiveCall | undefined;

  constructor(options: AgentGatekeeperOptions = {}) {
    const o = readGatekeeperOptions(options);
    this.mode = assertGatekeeperMode(o['mode']);
    const defaultDecision = o['defaultDecision'] ?? 'deny';
    if (defaultDecision !== 'deny' && defaultDecision !== 'allow') throw configError('AgentGatekeeper: defaultDecision must be deny or allow', { field: 'defaultDecision' });
    this.defaultDecision = defaultDecision;
    const audit = o['audit'] === undefined ? {} : o['audit'];
    const auditOptions = (() => {
      try {
        return readOptions('AgentGatekeeper audit', audit, ['critical']);
      } catch (cause) {
        throw configError(cause instanceof Error ? cause.message : 'audit: invalid options', { field: 'audit' });
      }
    })();
    if (auditOptions['critical'] !== undefined && typeof auditOptions['critical'] !== 'boolean') throw configError('AgentGatekeeper: audit.critical must be a boolean', { field: 'audit.critical' });
    this.auditCritical = (auditOptions['critical'] as boolean | undefined) ?? this.mode === 'enforce';
    this.audit = new AuditLogger({ sink: facadeSink(o['auditSink'] ?? new ConsoleAuditSink(), this.auditCritical) });
    this.compiled = compileHazelPolicies(o['policies'] ?? [], {
      functions: 'in-process',
      defaultDecision,
      ...(o['policySetId'] === undefined ? {} : { policySetId: o['policySetId'] as string }),
      active: () => this.active,
    });
    this.bundle = this.compiled.bundle;
    this.gatekeeper = createGatekeeper({ bundle: this.compiled.bundle, mode: this.mode, predicates: this.compiled.predicates });
    this.approvalProvider = o['approvalProvider'] as ApprovalProvider | undefined;
    if (this.approvalProvider !== undefined && (typeof this.approvalProvider.create !== 'function' || typeof this.approvalProvider.consume !== 'function')) {
      throw configError('AgentGatekeeper: approvalProvider must be InMemoryApprovalProvider or createKafkaApprovalProvider(...)', { field: 'approvalProvider' });
    }
    if (this.mode === 'enforce' && this.compiled.mayRequireApproval && this.approvalProvider === undefined) {
      throw configError('AgentGatekeeper: a policy can require approval, so pass approvalProvider (InMemoryApprovalProvider for tests, createKafkaApprovalProvider for replicas)', { field: 'approvalProvider' });
    }
  }

  /** Decides with `context` as the active call, so function rules see it (decisions are synchronous). */
  private withCall<T>(context: ToolInvocationContext<JsonValue>, classification: ToolClassification | undefined, decide: () => T): T {
    const previous = this.active;
    this.active = { context, ...(classification === undefined ? {} : { classification }) };
    try {
      return decide();
    } finally {
      this.active = previous;
    }
  }

  /** Decides a call without executing anything or recording it. Throws HAZELJS.VALIDATION for a malformed context. */
  async evaluate(context: ToolInvocationContext<unknown>, classification?: ToolClassification): Promise<HazelGatekeeperDecision> {
    const ctx = readInvocationContext(context);
    const decision = this.withCall(ctx, classification, () => this.gatekeeper.evaluate(gatekeeperContextOf(ctx)));
    return hazelDecisionOf(decision, this.compiled.origins);
  }

  /** The decision and why: never executes, never records, never creates an approval. */
  async simulate(context: ToolInvocationContext<unknown>, classification?: ToolClassification): Promise<GatekeeperSimulation> {
    const ctx = readInvocationContext(context);
    const explained = this.withCall(ctx, classification, () => this.gatekeeper.explain(gatekeeperContextOf(ctx)));
    const origins = this.compiled.origins;
    const matched = new Map<string, { id: string; version: string; priority: number }>();
    for (const id of explained.matched) {
      const origin = origins.get(id);
      if (origin?.id !== undefined) matched.set(origin.id, { id: origin.id, version: origin.version, priority: origin.priority });
    }
    const lines = explained.policies.map((p) => {
      const origin = origins.get(p.policyId);
      const name = origin?.kind === 'default' ? 'default decision' : `policy ${origin?.id ?? p.policyId}${origin?.kind === 'allow-failed' ? ' (allowWhen failed)' : ''}`;
      return `${name}: ${p.status}${p.field === undefined ? '' : ` (${p.field})`}`;
    });
    const ordered = [...matched.values()].sort((a, b) => b.priority - a.priority || (a.id < b.id ? -1 : a.id > b.id ? 1 : 0));
    return Object.freeze({ decision: hazelDecisionOf(explained.decision, origins), matchedPolicies: ordered, explanation: lines, gatehouse: explained });
  }

  /**
   * Decides, records, and runs the tool only when allowed (and, where a policy asks, approved).
   * Throws a `GatekeeperError`: HAZELJS.VALIDATION (malformed call, every mode), HAZELJS.DENIED,
   * HAZELJS.APPROVAL_REQUIRED (`approvalRequestId`), HAZELJS.APPROVAL_INVALID, HAZELJS.POLICY (a
   * record or approval that could not be made: fail closed), HAZELJS.EXECUTION (the tool failed).
   */
  async execute<TInput = Record<string, unknown>, TOutput = unknown>(input: GatekeeperExecuteInput<TInput, TOutput>): Promise<GatekeeperExecuteResult<TOutput>> {
    const started = Date.now();
    const call = await runApproved({ audit: this.audit, critical: this.auditCritical, mode: this.mode, approvalProvider: this.approvalProvider }, input, (ctx, tool) => {
      const decision = this.withCall(ctx, tool.classification, () => this.gatekeeper.evaluate(gatekeeperContextOf(ctx)));
      return { decision, hazel: hazelDecisionOf(decision, this.compiled.origins) };
    });
    return Object.freeze({ decision: call.decision, output: call.output as TOutput, durationMs: Date.now() - started });
  }
}
