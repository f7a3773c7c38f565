import { isJsonValue, type JsonValue } from '@gatehouse/contracts';
import { RequestContext } from '@mastra/core/request-context';
import { type ProcessInputArgs, type ProcessOutputResultArgs, type Processor } from '@mastra/core/processors';
import { createTool } from '@mastra/core/tools';
import { z } from 'zod';
import { type AuditLogger } from '../audit/audit-logger.js';
import { auditContextFromRequestContext } from '../context.js';
import { connectorHasApprovalGateway, isConnectorTool } from '../connector-sdk/connector.js';
import { GUARDRAIL_APPROVAL_CONTEXT_KEY } from '../connector-sdk/context-keys.js';
import { egressHookOf, type EgressRequestView, setEgressHook } from '../connector-sdk/egress/egress-hooks.js';
import { type EditJudge, type EditJudgement, setEditJudge } from '../connector-sdk/edit-judge.js';
import { type Abort, isTripWire } from '../internal/gate-audit.js';
import { actorFromRequestContext } from '../rbac/actor.js';
import { guardrailCode, guardrailReason, recordGuardrailDecision } from './audit-guardrail.js';
import { shareApprovalBudget } from './approval-budget.js';
import { failedDecision, type GuardrailDecision, runGuardrails } from './run-guardrails.js';
import { type Guardrail, type GuardrailInput, type GuardrailPlacement } from './types.js';
import { judgeOnce, type VerdictJournal } from './verdict-journal.js';

/** What a refused tool call returns to the model as that tool's result. */
export interface GuardrailRefusal {
  readonly valid: false;
  readonly tool: string;
  readonly error: string;
}

/** Per-call state of a guarded agent's guardrails: which guardrail halted the loop, if one did. */
export interface GuardrailRun {
  halted: { readonly by: string; readonly reason: string } | undefined;
  /** The run verdicts are journaled under: the call's `runId`, else the trusted audit context's. */
  readonly runId: string | undefined;
  /**
   * `post-model` outcomes by answer text: a streamed block is judged once whether the hold-back
   * or the result processor (which keeps memory in step) asks first.
   */
  readonly answers: Map<string, Promise<PostModelOutcome>>;
}

export const GUARDRAIL_PROCESSOR_ID = 'gatehouse-guardrails';

// Keyed by the per-call RequestContext the guarded agent creates: nothing in the context a tool can read.
const runs = new WeakMap<object, GuardrailRun>();

export interface AgentGuardrailsOptions {
  readonly agentId: string;
  readonly guardrails: readonly Guardrail[];
  readonly audit: AuditLogger | undefined;
  readonly timeoutMs?: number;
  /** Where `tool-args` and `tool-result` verdicts are recorded per tool call, and read back on a resumed run. */
  readonly journal?: VerdictJournal;
}

/** True when some guardrail declares the placement. */
export function hasPlacement(guardrails: readonly Guardrail[], placement: GuardrailPlacement): boolean {
  return guardrails.some((g) => g.placements.includes(placement));
}

/**
 * A copy of the caller's context for one call, with its guardrail run state (kept off the context
 * itself) and the egress hook connectors consult.
 */
export function startGuardrailRun(
  options: AgentGuardrailsOptions,
  callerContext: RequestContext,
  signal: AbortSignal | undefined,
  runId?: string,
): { requestContext: RequestContext; run: GuardrailRun } {
  const requestContext = new RequestContext() as RequestContext;
  for (const [key, value] of callerContext.entries()) requestContext.set(key, value);
  shareApprovalBudget(callerContext, requestContext);
  const run: GuardrailRun = { halted: undefined, runId: runId ?? auditContextFromRequestContext(callerContext).runId, answers: new Map() };
  runs.set(requestContext, run);
  if (hasPlacement(options.guardrails, 'egress')) {
    setEgressHook(requestContext, async (request: EgressRequestView) => {
      const decision = await decide(options, 'egress', request as unknown as JsonValue, requestContext, signal, `agent:${options.agentId}`, { host: request.host, method: request.method });
      const action = decision.verdict.action;
      if (action === 'halt') run.halted ??= { by: decision.by ?? 'guardrail', reason: guardrailReason(decision) };
      // Egress cannot be masked or parked: anything but allow/observe refuses the request.
      return action === 'allow' || action === 'observe' ? { allowed: true } : { allowed: false, code: guardrailCode(decision) };
    });
  }
  return { requestContext, run };
}

/**
 * A copy of this call's context for a connector: it keeps the run, the egress hook and the approval
 * budget of the original, carries the judge of a reviewer's edit, and, when a guardrail parked the
 * call on a person, says so (GUARDRAIL_APPROVAL_CONTEXT_KEY).
 */
function connectorCallContext(rc: unknown, judge: EditJudge, parkedBy?: string): RequestContext {
  const copy = new RequestContext() as RequestContext;
  if (rc instanceof RequestContext) for (const [key, value] of rc.entries()) copy.set(key, value);
  if (parkedBy !== undefined) copy.set(GUARDRAIL_APPROVAL_CONTEXT_KEY, Object.freeze({ by: parkedBy }));
  const run = guardrailRunOf(rc);
  if (run) runs.set(copy, run);
  const hook = egressHookOf(rc);
  if (hook) setEgressHook(copy, hook);
  shareApprovalBudget(rc, copy);
  setEditJudge(copy, judge);
  return copy;
}

export function guardrailRunOf(requestContext: unknown): GuardrailRun | undefined {
  return requestContext !== null && typeof requestContext === 'object' ? runs.get(requestContext) : undefined;
}

function contextOf(agentId: string, requestContext: unknown): GuardrailInput['context'] {
  const audit = auditContextFromRequestContext(requestContext);
  const actor = actorFromRequestContext(requestContext);
  return {
    agentId,
    ...(audit.tenant === undefined ? {} : { tenant: audit.tenant }),
    ...(audit.runId === undefined ? {} : { runId: audit.runId }),
    ...(actor ? { actor: { id: actor.id, role: actor.role } } : {}),
  };
}

const NOT_RECORDED: GuardrailDecision = failedDecision('guardrail.unrecorded', 'audit');
const NOT_JSON: GuardrailDecision = failedDecision('guardrail.not-json', undefined);

/**
 * Runs the guardrails of one placement and records the decision; an unrecordable decision denies.
 * With a journal, a run id and a `step` (the tool call id), the verdict is a step of the run: read
 * back on a resumed run instead of judged again (the audit record then says `replayed`).
 */
async function decide(
  options: AgentGuardrailsOptions,
  placement: GuardrailPlacement,
  value: JsonValue,
  requestContext: unknown,
  signal: AbortSignal | undefined,
  resource: string,
  detail: Record<string, string | number | boolean>,
  tool?: GuardrailInput['tool'],
  step?: string,
): Promise<GuardrailDecision> {
  const startedAt = performance.now();
  const context = contextOf(options.agentId, requestContext);
  const runId = guardrailRunOf(requestContext)?.runId ?? context.runId;
  const binding = runId === undefined || step === undefined ? undefined : { runId, tenant: context.tenant, agentId: options.agentId, placement, step, value, tool };
  const { decision, replayed } = await judgeOnce(options.journal, binding, options.guardrails, () =>
    runGuardrails(
      options.guardrails,
      { placement, value, ...(tool ? { tool } : {}), context, signal: signal ?? new AbortController().signal },
      options.timeoutMs === undefined ? {} : { timeoutMs: options.timeoutMs },
    ));
  if (decision.ran.length === 0 && !decision.fault) return decision;
  const recorded = await recordGuardrailDecision(options.audit, decision, { placement, resource, requestContext, detail: replayed ? { ...detail, replayed: true } : detail, startedAt });
  return recorded ? decision : NOT_RECORDED;
}

/**
 * What a verdict on a reviewer's edit means for the call. A person wrote and approved these
 * arguments, so an `approve` verdict is already answered; a mask or rewrite runs its payload (the
 * connector's schema judges it again); deny and halt refuse the call, and halt ends the run.
 */
function editJudgement(decision: GuardrailDecision, edited: JsonValue, run: GuardrailRun | undefined): EditJudgement {
  switch (decision.verdict.action) {
    case 'allow':
    case 'observe':
    case 'approve':
      return { kind: 'run', input: edited };
    case 'mask':
    case 'rewrite':
      return decision.verdict.payload === undefined ? { kind: 'refused' } : { kind: 'run', input: decision.verdict.payload };
    case 'halt':
      if (run) run.halted ??= { by: decision.by ?? 'guardrail', reason: guardrailReason(decision) };
      return { kind: 'refused' };
    case 'deny':
      return { kind: 'refused' };
    default: {
      const exhaustive: never = decision.verdict.action;
      return exhaustive;
    }
  }
}

function refusal(tool: string, decision: GuardrailDecision): GuardrailRefusal {
  return Object.freeze({ valid: false, tool, error: `tool call "${tool}" refused: ${guardrailReason(decision)}` });
}

/**
 * A tool's input JSON Schema: from the Standard JSON Schema interface (`~standard.jsonSchema`, which a
 * zod schema has and Mastra gives a tool declared with a plain JSON Schema, as Duraton's are), else
 * from zod. Undefined when there is none to read (the schema guardrail then treats the tool as schemaless).
 */
function jsonSchemaOf(schema: unknown): Readonly<Record<string, JsonValue>> | undefined {
  if (schema === null || typeof schema !== 'object') return undefined;
  const asObject = (json: unknown) => (isJsonValue(json) && json !== null && typeof json === 'object' && !Array.isArray(json) ? (json as Record<string, JsonValue>) : undefined);
  try {
    const standard = (schema as { '~standard'?: { jsonSchema?: { input?: (options: { target: string }) => unknown } } })['~standard'];
    if (typeof standard?.jsonSchema?.input === 'function') return asObject(standard.jsonSchema.input({ target: 'draft-2020-12' }));
    return asObject(z.toJSONSchema(schema as z.ZodType, { unrepresentable: 'any' }));
  } catch {
    return undefined;
  }
}

interface ToolLike {
  readonly id?: string;
  readonly description?: string;
  readonly inputSchema?: unknown;
  readonly requireApproval?: unknown;
  execute?: (input: unknown, context: unknown) => unknown;
}

/**
 * Wraps each tool's `execute` so `tool-args` runs before the tool and `tool-result` after it. A refused
 * call never throws: the refusal `{ valid: false, tool, error }` is the tool's result, so the model can
 * correct itself, and the original `execute` never runs. `approve` goes through a connector's approvals
 * gateway when it has one and is refused otherwise; `halt` marks the run (the loop ends before the next
 * model step) and refuses this call.
 */
export function wrapToolsWithGuardrails(tools: Record<string, unknown>, options: AgentGuardrailsOptions): Record<string, unknown> {
  const args = hasPlacement(options.guardrails, 'tool-args');
  const results = hasPlacement(options.guardrails, 'tool-result');
  if (!args && !results) return tools;
  const out: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(tools)) {
    const original = value as ToolLike;
    if (original === null || typeof original !== 'object' || typeof original.execute !== 'function') {
      throw new TypeError(`createGuardedAgent: tool "${key}" has no execute function to guard`);
    }
    const toolId = typeof original.id === 'string' && original.id.length > 0 ? original.id : key;
    const inputSchema = jsonSchemaOf(original.inputSchema);
    const tool = { id: toolId, ...(inputSchema ? { inputSchema } : {}) };
    const resource = `tool:${toolId}`;
    const execute = async (input: unknown, ctx: unknown): Promise<unknown> => {
      const context = (ctx ?? {}) as { requestContext?: unknown; abortSignal?: AbortSignal; agent?: { toolCallId?: string } };
      const rc = context.requestContext;
      const run = guardrailRunOf(rc);
      const toolCallId = typeof context.agent?.toolCallId === 'string' ? context.agent.toolCallId : undefined;
      const detail = { tool: toolId, ...(toolCallId === undefined ? {} : { toolCallId }) };
      let callInput = input;
      let callCtx = ctx;
      // A reviewer may approve the call with edits: the guardrails judge those arguments too (a step of its own).
      const judgeEdit: EditJudge = async (edited) => {
        const step = toolCallId === undefined ? undefined : `${toolCallId}#edit`;
        const verdict = await decide(options, 'tool-args', edited, rc, context.abortSignal, resource, { ...detail, edit: true }, tool, step);
        return editJudgement(verdict, edited, run);
      };
      if (args) {
        const decision = isJsonValue(input) ? await decide(options, 'tool-args', input, rc, context.abortSignal, resource, detail, tool, toolCallId) : NOT_JSON;
        switch (decision.verdict.action) {
          case 'allow':
          case 'observe':
            break;
          case 'mask':
          case 'rewrite':
            callInput = decision.verdict.payload;
            break;
          case 'approve':
            // A person must say yes: only a connector's approvals gateway can ask one. The call is
            // parked there even if the connector's manifest does not require approval.
            if (!connectorHasApprovalGateway(original)) return refusal(toolId, { ...decision, verdict: { ...decision.verdict, reason: 'approval.unavailable' } });
            callCtx = { ...context, requestContext: connectorCallContext(rc, judgeEdit, decision.by ?? 'guardrail') };
            break;
          case 'halt':
            if (run) run.halted ??= { by: decision.by ?? 'guardrail', reason: guardrailReason(decision) };
            return refusal(toolId, decision);
          case 'deny':
            return refusal(toolId, decision);
          default: {
            const exhaustive: never = decision.verdict.action;
            return exhaustive;
          }
        }
      }
      // Any connector may run a reviewer's edit: from its approvals gateway, or from a grant in context.
      if (args && callCtx === ctx && isConnectorTool(original)) callCtx = { ...context, requestContext: connectorCallContext(rc, judgeEdit) };
      const output = await original.execute!(callInput, callCtx);
      if (!results) return output;
      const decision = isJsonValue(output) ? await decide(options, 'tool-result', output, rc, context.abortSignal, resource, detail, tool, toolCallId) : NOT_JSON;
      switch (decision.verdict.action) {
        case 'allow':
        case 'observe':
          return output;
        case 'mask':
        case 'rewrite':
          return decision.verdict.payload;
        case 'halt':
          if (run) run.halted ??= { by: decision.by ?? 'guardrail', reason: guardrailReason(decision) };
          return refusal(toolId, decision);
        case 'deny':
        case 'approve':
          // A result cannot be parked on a person after the fact: it is withheld.
          return refusal(toolId, decision);
        default: {
          const exhaustive: never = decision.verdict.action;
          return exhaustive;
        }
      }
    };
    out[key] = createTool({
      id: toolId,
      description: typeof original.description === 'string' ? original.description : toolId,
      ...(original.inputSchema === undefined ? {} : { inputSchema: original.inputSchema as never }),
      ...(original.requireApproval === undefined ? {} : { requireApproval: original.requireApproval as never }),
      execute: execute as never,
    });
  }
  return out;
}

interface TextPart {
  type: string;
  text?: unknown;
}

/**
 * The messages with each text part of the selected roles replaced by `rewrite(text)`, in order
 * (a refusal throws out of `rewrite`); other parts and messages are kept as they are.
 */
async function rewriteTextParts<M extends { readonly role: string; readonly content: unknown }>(messages: readonly M[], selected: (role: string) => boolean, rewrite: (text: string) => Promise<string>): Promise<M[]> {
  const out: M[] = [];
  for (const message of messages) {
    const parts = (message.content as { parts?: TextPart[] }).parts;
    if (!selected(message.role) || !Array.isArray(parts)) {
      out.push(message);
      continue;
    }
    const next: TextPart[] = [];
    for (const part of parts) next.push(part.type === 'text' && typeof part.text === 'string' ? { ...part, text: await rewrite(part.text) } : part);
    out.push({ ...message, content: { ...(message.content as object), parts: next } });
  }
  return out;
}

/**
 * The guardrails' Mastra processor: `pre-prompt` on every text part of the input (mask/rewrite replace
 * the part; deny, approve and halt refuse the call); before every model step a halted run ends;
 * `post-model` on every text part of the answer before Mastra stores it (mask/rewrite replace the
 * part, so a memory keeps what the caller got; anything else refuses the answer, and a refused
 * turn is not stored). Every body catches every error and aborts.
 */
export class GuardrailProcessor implements Processor<typeof GUARDRAIL_PROCESSOR_ID> {
  readonly id = GUARDRAIL_PROCESSOR_ID;
  readonly name = 'gatehouse guardrails';

  constructor(private readonly options: AgentGuardrailsOptions) {}

  async processInput(args: ProcessInputArgs): Promise<ProcessInputArgs['messages']> {
    const { messages, abort, requestContext, abortSignal } = args;
    try {
      if (!hasPlacement(this.options.guardrails, 'pre-prompt')) return messages;
      return await rewriteTextParts(messages, (role) => role !== 'system', async (text) => {
        const decision = await decide(this.options, 'pre-prompt', text, requestContext, abortSignal, `agent:${this.options.agentId}`, {});
        const { action, payload } = decision.verdict;
        if (action === 'mask' || action === 'rewrite') return typeof payload === 'string' ? payload : JSON.stringify(payload);
        if (action === 'allow' || action === 'observe') return text;
        return this.stop(decision, requestContext, abort);
      });
    } catch (error) {
      if (isTripWire(error)) throw error;
      return abort('Guardrail evaluation failed', { metadata: { code: 'GUARDRAIL.FAULT' } });
    }
  }

  async processOutputResult(args: ProcessOutputResultArgs): Promise<ProcessOutputResultArgs['messages']> {
    const { messages, abort, requestContext, abortSignal } = args;
    try {
      if (!hasPlacement(this.options.guardrails, 'post-model')) return messages;
      return await rewriteTextParts(messages, (role) => role === 'assistant', async (text) => {
        if (text.length === 0) return text;
        const outcome = await judgeAnswerOnce(this.options, text, requestContext, abortSignal);
        if (outcome.kind === 'pass') return outcome.text;
        if (outcome.kind === 'halted') {
          const run = guardrailRunOf(requestContext);
          if (run) run.halted ??= { by: outcome.by, reason: outcome.reason };
        }
        const code = outcome.kind === 'halted' ? 'GUARDRAIL.HALTED' : outcome.code;
        return abort(outcome.reason, { metadata: { code, guardrail: outcome.by, placement: 'post-model' } });
      });
    } catch (error) {
      if (isTripWire(error)) throw error;
      return abort('Guardrail evaluation failed', { metadata: { code: 'GUARDRAIL.FAULT' } });
    }
  }

  async processInputStep(args: { requestContext?: unknown; abort: Abort }): Promise<undefined> {
    const halted = guardrailRunOf(args.requestContext)?.halted;
    if (halted) args.abort(halted.reason, { metadata: { code: 'GUARDRAIL.HALTED', guardrail: halted.by } });
    return undefined;
  }

  private stop(decision: GuardrailDecision, requestContext: unknown, abort: Abort): never {
    const code = decision.verdict.action === 'halt' && !decision.fault ? 'GUARDRAIL.HALTED' : guardrailCode(decision);
    if (code === 'GUARDRAIL.HALTED') {
      const run = guardrailRunOf(requestContext);
      if (run) run.halted ??= { by: decision.by ?? 'guardrail', reason: guardrailReason(decision) };
    }
    // `approve` on a prompt has nobody to park it on: it refuses, like a deny.
    return abort(guardrailReason(decision), { metadata: { code, guardrail: decision.by ?? 'guardrail', placement: 'pre-prompt' } });
  }
}

/** The result of judging a final answer at `post-model`. */
export type PostModelOutcome =
  | { readonly kind: 'pass'; readonly text: string }
  | { readonly kind: 'refused'; readonly code: string; readonly reason: string; readonly by: string }
  | { readonly kind: 'halted'; readonly reason: string; readonly by: string };

/** `judgeAnswer` once per text and call: the run's earlier outcome for the same text, when there is one. */
export function judgeAnswerOnce(options: AgentGuardrailsOptions, text: string, requestContext: unknown, signal: AbortSignal | undefined): Promise<PostModelOutcome> {
  const run = guardrailRunOf(requestContext);
  if (!run) return judgeAnswer(options, text, requestContext, signal);
  let outcome = run.answers.get(text);
  if (!outcome) {
    outcome = judgeAnswer(options, text, requestContext, signal);
    run.answers.set(text, outcome);
  }
  return outcome;
}

/** Judges the final answer text: mask/rewrite replace it, deny/approve/fault refuse it, halt halts. */
export async function judgeAnswer(options: AgentGuardrailsOptions, text: string, requestContext: unknown, signal: AbortSignal | undefined): Promise<PostModelOutcome> {
  if (!hasPlacement(options.guardrails, 'post-model')) return { kind: 'pass', text };
  const decision = await decide(options, 'post-model', text, requestContext, signal, `agent:${options.agentId}`, {});
  const { action, payload } = decision.verdict;
  if (action === 'allow' || action === 'observe') return { kind: 'pass', text };
  if (action === 'mask' || action === 'rewrite') return { kind: 'pass', text: typeof payload === 'string' ? payload : JSON.stringify(payload) };
  const by = decision.by ?? 'guardrail';
  if (action === 'halt' && !decision.fault) return { kind: 'halted', reason: guardrailReason(decision), by };
  return { kind: 'refused', code: guardrailCode(decision), reason: guardrailReason(decision), by };
}
