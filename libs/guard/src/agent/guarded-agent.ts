import { GatehouseError } from '@gatehouse/contracts';
import { Agent, type AgentConfig } from '@mastra/core/agent';
import { Mastra } from '@mastra/core/mastra';
import { type InputProcessor, type OutputProcessor, type Processor } from '@mastra/core/processors';
import { type ChunkType } from '@mastra/core/stream';
import { context } from '@opentelemetry/api';
import { type AuditLogger } from '../audit/audit-logger.js';
import { auditContextFromRequestContext } from '../context.js';
import { startTurn } from '../telemetry/spans.js';
import { ApprovalBudgetProcessor, approvalBudgetExhausted, approvalBudgetStop, readApprovalBudget, setApprovalBudget } from '../guardrails/approval-budget.js';
import { GUARDRAIL_PROCESSOR_ID, GuardrailProcessor, guardrailRunOf, hasPlacement, judgeAnswerOnce, startGuardrailRun, wrapToolsWithGuardrails } from '../guardrails/agent-guardrails.js';
import { validateGuardrails } from '../guardrails/run-guardrails.js';
import { type Guardrail } from '../guardrails/types.js';
import { validateJournal, type VerdictJournal } from '../guardrails/verdict-journal.js';
import { PolicyEngine } from '../policy-engine/policy-engine.js';
import { type PolicyEvaluator } from '../policy-engine/types.js';
import { type PrincipalKind } from '../rbac/actor.js';
import { RBACMiddleware } from '../rbac/rbac-middleware.js';
import { assertNoSystemMessages, type GuardedCallOptions, validateCallOptions } from './call-options.js';
import { createAnswerHold, createTextEndRestorer } from './answer-hold.js';
import { createCallerView, knownFinishReason } from './caller-stream.js';
import { createContentStage } from './content-stage.js';
import { callerStreams } from './caller-streams.js';
import { pumpStages } from './stream-stages.js';
import { InputAssetGuard, normalizeAssetOrigins } from './input-assets.js';
import { gateTools, openStepGate, shareStepGate, STEP_GATE_PROCESSOR_ID, StepGateProcessor, type StepRefusal } from './step-gate.js';

export interface GuardedAgentConfig {
  readonly id: string;
  readonly name: string;
  readonly description?: string;
  readonly instructions: AgentConfig['instructions'];
  readonly model: AgentConfig['model'];
  readonly tools?: AgentConfig['tools'];
  readonly memory?: AgentConfig['memory'];
  /** Exact allowlist of roles for human callers. */
  readonly allowedRoles: readonly string[];
  /** Principal kinds that may call; default `['human']`. */
  readonly allowedPrincipalKinds?: readonly PrincipalKind[];
  /** Content policies on input, the stream and the final output (hold-back is always on). */
  readonly policies?: readonly PolicyEvaluator[];
  readonly audit?: AuditLogger;
  /** Application input processors: `processInput` only; they run after the role gate. */
  readonly inputProcessors?: readonly Processor[];
  /** Application output processors: must implement `processOutputStream` and `processOutputResult`; policies run after them. */
  readonly outputProcessors?: readonly Processor[];
  readonly maxSteps?: number;
  readonly toolChoice?: 'auto' | 'none' | 'required';
  /** http(s) origins that file and image parts may name; absent or empty: no network URLs. */
  readonly allowedInputAssetOrigins?: readonly string[];
  /** Deadline of one policy evaluation, ms (default 5000). */
  readonly evaluationTimeoutMs?: number;
  /**
   * Guardrails at every placement of the loop: `pre-prompt` (input text), `post-model` (the answer),
   * `tool-args` and `tool-result` (each tool's execute is wrapped), `egress` (connectors' requests).
   * In order; the first verdict that is not allow decides. On `stream()`, `post-model` judges each
   * text block whole before any of it is released (mask and rewrite replace it; a refusal or halt
   * ends the stream with a `tripwire` chunk). A memory stores the judged answer, never the model's
   * own words, and nothing of a turn whose answer was refused.
   */
  readonly guardrails?: readonly Guardrail[];
  /**
   * Calls a run may park on a person (0 to 1,000; default no cap). Past it no reviewer is asked: the
   * call is refused (`CONNECTOR.APPROVAL_BUDGET`) and the loop ends with stopReason `approval-budget`.
   */
  readonly approvalBudget?: number;
  /** Records each tool call's `tool-args`/`tool-result` verdict under the call's run id; a resumed run reads it back. */
  readonly verdictJournal?: VerdictJournal;
}

/** Why a guarded call stopped: a stable code and a static reason, never the inspected content. */
export interface GuardedTripwire {
  readonly reason: string;
  readonly code: string | undefined;
  readonly processorId: string | undefined;
}

/**
 * Why the loop ended: it finished, a gate stopped it (`tripwire`), a guardrail halted it, it used up
 * `maxSteps` still calling tools (`max-iterations`), or it used up its `approvalBudget`.
 */
export type GuardedStopReason = 'finished' | 'tripwire' | 'guardrail' | 'max-iterations' | 'approval-budget';

/** The narrow result of `generate()`: no messages or steps that could still hold blocked text. */
export interface GuardedGenerateResult {
  readonly stopReason: GuardedStopReason;
  /** The guardrail that halted the loop, when `stopReason` is `guardrail`. */
  readonly haltedBy?: string;
  /** Empty whenever `tripwire` is set. */
  readonly text: string;
  readonly finishReason: string | undefined;
  readonly tripwire: GuardedTripwire | undefined;
  readonly runId: string | undefined;
}

/** The narrow result of `stream()`. */
export interface GuardedStream {
  /** Chunks after every output processor and the policies (held back where needed). */
  readonly fullStream: ReadableStream<ChunkType>;
  readonly textStream: ReadableStream<string>;
  /** Resolves after the stream ends: the text, or '' when a tripwire stopped it. */
  result(): Promise<GuardedGenerateResult>;
}

export type GuardedMessages = Parameters<Agent['generate']>[0];

export interface GuardedAgent {
  readonly id: string;
  readonly name: string;
  generate(messages: GuardedMessages, options: GuardedCallOptions): Promise<GuardedGenerateResult>;
  stream(messages: GuardedMessages, options: GuardedCallOptions): Promise<GuardedStream>;
}

const CONFIG_FIELDS = new Set<keyof GuardedAgentConfig>([
  'id', 'name', 'description', 'instructions', 'model', 'tools', 'memory',
  'allowedRoles', 'allowedPrincipalKinds', 'policies', 'audit', 'inputProcessors', 'outputProcessors',
  'maxSteps', 'toolChoice', 'allowedInputAssetOrigins', 'evaluationTimeoutMs', 'guardrails',
  'approvalBudget', 'verdictJournal',
]);

const PROCESSOR_HOOKS = ['processInput', 'processInputStep', 'processOutputStream', 'processOutputResult', 'processOutputStep', 'processToolResult', 'processLLMRequest', 'processLLMResponse', 'processAPIError'] as const;

function hooksOf(processor: Processor): string[] {
  return PROCESSOR_HOOKS.filter((hook) => typeof (processor as unknown as Record<string, unknown>)[hook] === 'function');
}

function validateProcessors(list: readonly Processor[] | undefined, kind: 'input' | 'output'): Processor[] {
  if (list === undefined) return [];
  if (!Array.isArray(list)) throw new TypeError(`createGuardedAgent: ${kind}Processors must be an array`);
  return list.map((processor, index) => {
    if (processor === null || typeof processor !== 'object' || typeof processor.id !== 'string' || processor.id.length === 0) {
      throw new TypeError(`createGuardedAgent: ${kind}Processors[${index}] must be a processor with an id`);
    }
    const hooks = hooksOf(processor);
    if (kind === 'input') {
      if (hooks.length !== 1 || hooks[0] !== 'processInput') {
        throw new TypeError(`createGuardedAgent: input processor "${processor.id}" may implement only processInput`);
      }
    } else {
      if (!hooks.includes('processOutputStream') || !hooks.includes('processOutputResult')) {
        throw new TypeError(`createGuardedAgent: output processor "${processor.id}" must implement processOutputStream and processOutputResult`);
      }
      const refused = hooks.filter((h) => h !== 'processOutputStream' && h !== 'processOutputResult' && h !== 'processOutputStep');
      if (refused.length > 0) throw new TypeError(`createGuardedAgent: output processor "${processor.id}" may not implement ${refused.join(', ')}`);
    }
    return processor;
  });
}

function tripwireOf(raw: unknown): GuardedTripwire | undefined {
  if (raw === null || raw === undefined || typeof raw !== 'object') return undefined;
  const t = raw as { reason?: unknown; processorId?: unknown; metadata?: { code?: unknown } };
  return Object.freeze({
    reason: typeof t.reason === 'string' ? t.reason : 'Blocked',
    code: typeof t.metadata?.code === 'string' ? t.metadata.code : undefined,
    processorId: typeof t.processorId === 'string' ? t.processorId : undefined,
  });
}

/**
 * A real Mastra agent behind a narrow handle. Order of the gates on every call: role gate,
 * application input processors, input asset origins, input policies; output policies run
 * after the application output processors, with streaming hold-back always on.
 */
export function createGuardedAgent(config: GuardedAgentConfig): GuardedAgent {
  if (config === null || typeof config !== 'object') throw new TypeError('createGuardedAgent: config is required');
  const unknown = Object.keys(config).filter((k) => !CONFIG_FIELDS.has(k as keyof GuardedAgentConfig));
  if (unknown.length > 0) throw new TypeError(`createGuardedAgent: unknown config field ${unknown.map((k) => `"${k}"`).join(', ')}`);
  if (typeof config.id !== 'string' || config.id.length === 0) throw new TypeError('createGuardedAgent: id is required');
  const maxSteps = config.maxSteps ?? 5;
  if (!Number.isInteger(maxSteps) || maxSteps < 1 || maxSteps > 100) throw new TypeError('createGuardedAgent: maxSteps must be an integer from 1 to 100');
  const toolChoice = config.toolChoice ?? 'auto';
  if (!['auto', 'none', 'required'].includes(toolChoice)) throw new TypeError('createGuardedAgent: toolChoice must be auto, none or required');

  const resource = `agent:${config.id}`;
  const rbac = new RBACMiddleware({
    allowedRoles: config.allowedRoles,
    ...(config.allowedPrincipalKinds ? { allowedPrincipalKinds: config.allowedPrincipalKinds } : {}),
    ...(config.audit ? { audit: config.audit } : {}),
    resource,
  });
  const engine = new PolicyEngine({
    policies: config.policies ?? [],
    holdBack: true,
    ...(config.audit ? { audit: config.audit } : {}),
    resource,
    ...(config.evaluationTimeoutMs === undefined ? {} : { evaluationTimeoutMs: config.evaluationTimeoutMs }),
    // The operator's instructions are configuration; system text an input processor adds is judged.
    trustedInstructions: config.instructions,
  });
  // Structured output is refused, so a policy that reads only `object` would never run: refused, never skipped.
  if (engine.objectOnlyPolicies().length > 0) throw new TypeError('createGuardedAgent: a policy that reads only the object channel cannot run on a guarded agent');
  if ((config.policies ?? []).length > 0 && !engine.covers('input', 'answer') && !engine.covers('output', 'answer') && !engine.covers('output', 'reasoning')) {
    // Structured output is refused, so a policy set that only reads `object` would never run.
    throw new TypeError('createGuardedAgent: no policy judges the answer or reasoning channel (object-only policies cannot run on a guarded agent)');
  }
  const assets = new InputAssetGuard(normalizeAssetOrigins(config.allowedInputAssetOrigins, 'createGuardedAgent'), config.audit, resource);
  assertGuardableMemory(config.memory);
  const inputProcessors = validateProcessors(config.inputProcessors, 'input');
  const outputProcessors = validateProcessors(config.outputProcessors, 'output');
  const guardrails = config.guardrails === undefined ? [] : validateGuardrails(config.guardrails, 'createGuardedAgent');
  const guarding = guardrails.length > 0;
  const approvalBudget = readApprovalBudget(config.approvalBudget, 'createGuardedAgent');
  const journal = config.verdictJournal === undefined ? undefined : validateJournal(config.verdictJournal, 'createGuardedAgent');
  const guardrailOptions = { agentId: config.id, guardrails, audit: config.audit, ...(config.evaluationTimeoutMs === undefined ? {} : { timeoutMs: config.evaluationTimeoutMs }), ...(journal === undefined ? {} : { journal }) };
  if (config.tools !== undefined && (config.tools === null || typeof config.tools !== 'object' || Array.isArray(config.tools))) {
    throw new TypeError('createGuardedAgent: tools must be a record of tools (dynamic tools cannot be gated)');
  }
  // Guardrails wrap each tool first; the step gate wraps outermost, so nothing of a tool runs before its step's verdict.
  const guardedTools = guarding && config.tools !== undefined ? wrapToolsWithGuardrails(config.tools as Record<string, unknown>, guardrailOptions) : config.tools;
  const tools = guardedTools === undefined ? undefined : gateTools(guardedTools as Record<string, unknown>, 'createGuardedAgent');
  const guardrailProcessors = guarding ? [new GuardrailProcessor(guardrailOptions)] : [];
  const toolNames: ReadonlySet<string> = new Set(Object.entries((tools ?? {}) as Record<string, { id?: unknown }>).flatMap(([key, tool]) => (typeof tool.id === 'string' ? [key, tool.id] : [key])));
  const judgesAnswer = guarding && hasPlacement(guardrails, 'post-model');
  // A step's text judged whole before its tools run: the policies once more (a block never closed
  // was never judged final), then the `post-model` guardrails (the same judgement the hold reuses).
  const stepGate = new StepGateProcessor(async (text, args): Promise<StepRefusal | undefined> => {
    const refused = await engine.judgeStep(text, args.requestContext, args.abortSignal);
    if (refused || !judgesAnswer || text.answer.length === 0) return refused;
    const outcome = await judgeAnswerOnce(guardrailOptions, text.answer, args.requestContext, args.abortSignal);
    if (outcome.kind === 'pass') return undefined;
    if (outcome.kind === 'halted') {
      const run = guardrailRunOf(args.requestContext);
      if (run) run.halted ??= { by: outcome.by, reason: outcome.reason };
      return { code: 'GUARDRAIL.HALTED', reason: outcome.reason };
    }
    return { code: outcome.code, reason: outcome.reason };
  });

  const agentConfig = {
    id: config.id,
    name: config.name,
    ...(config.description === undefined ? {} : { description: config.description }),
    instructions: config.instructions,
    model: config.model,
    ...(tools === undefined ? {} : { tools: tools as AgentConfig['tools'] }),
    ...(config.memory === undefined ? {} : { memory: config.memory }),
    // The step gate comes last: it judges each step once every other processor has seen it.
    inputProcessors: [rbac, ...inputProcessors, assets, engine, ...guardrailProcessors, ...(approvalBudget === undefined ? [] : [new ApprovalBudgetProcessor()]), stepGate] as InputProcessor[],
  };
  // The policies judge a live stream in the guarded stream's own reader (content-stage.ts), not as
  // a processor of every chunk; as processors they judge the final output, which is what memory
  // stores (the guardrails last: `post-model` rewrites the stored answer after the policies judged it).
  const agent = new Agent({ ...agentConfig, outputProcessors: [...outputProcessors, finalOutputOf(engine), ...guardrailProcessors] as OutputProcessor[] });
  // Without memory nothing is stored, and the stream's reader judges the final output itself: its
  // agent has only the application's output processors (each one Mastra runs per chunk).
  const streamAgent = config.memory === undefined ? new Agent({ ...agentConfig, outputProcessors: [...outputProcessors] as OutputProcessor[] }) : agent;
  // Registered with a silent logger: Mastra prints aborts to the console otherwise, and the
  // audit trail, not stderr, is where decisions belong.
  new Mastra({ agents: { [config.id]: agent, ...(streamAgent === agent ? {} : { [`${config.id}:stream`]: streamAgent }) }, logger: false });

  const callOptions = (options: GuardedCallOptions, requestContext: GuardedCallOptions['requestContext']) => ({
    requestContext,
    maxSteps,
    toolChoice,
    ...(options.runId === undefined ? {} : { runId: options.runId }),
    ...(options.abortSignal === undefined ? {} : { abortSignal: options.abortSignal }),
    ...(options.memory === undefined ? {} : { memory: options.memory }),
  });

  // One call's context: a copy of the caller's with the call's step gate (and guardrail run) beside it.
  // A refused step stops the run through `stopper`, beside the caller's own signal.
  const startCall = (valid: GuardedCallOptions, stopper: AbortController) => {
    const opened = openStepGate(valid.requestContext, () => stopper.abort());
    if (approvalBudget !== undefined) setApprovalBudget(opened.requestContext, approvalBudget);
    const started = guarding ? startGuardrailRun(guardrailOptions, opened.requestContext, valid.abortSignal, valid.runId) : undefined;
    if (started) shareStepGate(started.requestContext, opened.gate);
    return { requestContext: started?.requestContext ?? opened.requestContext, gate: opened.gate, started };
  };

  // One generate() call, inside its turn.
  const generateCall = async (messages: GuardedMessages, valid: GuardedCallOptions): Promise<GuardedGenerateResult> => {
    const stopper = new AbortController();
    const { requestContext, gate, started } = startCall(valid, stopper);
    const abortSignal = valid.abortSignal === undefined ? stopper.signal : AbortSignal.any([valid.abortSignal, stopper.signal]);
    let result: Awaited<ReturnType<Agent['generate']>>;
    try {
      result = await agent.generate(messages, callOptions({ ...valid, abortSignal }, requestContext) as never);
    } catch {
      throw runFailed();
    } finally {
      gate.close();
    }
    const runId = (result as { runId?: string }).runId ?? valid.runId;
    // `post-model` guardrails ran in the guardrail processor: `text` is the judged answer.
    const tripwire = tripwireOf((result as { tripwire?: unknown }).tripwire);
    const text = tripwire ? '' : result.text;
    const halted = started?.run.halted;
    if (halted) {
      return Object.freeze({
        stopReason: 'guardrail' as const,
        haltedBy: halted.by,
        text: '',
        finishReason: 'tripwire',
        tripwire: Object.freeze({ reason: halted.reason, code: 'GUARDRAIL.HALTED', processorId: GUARDRAIL_PROCESSOR_ID }),
        runId,
      });
    }
    if (approvalBudgetExhausted(requestContext)) return approvalBudgetStop(runId);
    if (gate.refused) return refusedResult(gate.refused, runId);
    const finishReason = knownFinishReason(result.finishReason);
    return Object.freeze({
      stopReason: tripwire ? ('tripwire' as const) : stopOf(finishReason),
      text: tripwire ? '' : text,
      finishReason: tripwire ? 'tripwire' : finishReason,
      tripwire,
      runId,
    });
  };

  const handle: GuardedAgent = {
    id: config.id,
    name: config.name,
    async generate(messages, options) {
      const valid = validateCallOptions(options, 'generate');
      assertNoSystemMessages(messages, 'generate');
      // The turn's span: every gate of the call is its child (a no-op without an OpenTelemetry SDK).
      const turn = startTurn(config, 'generate', auditContextFromRequestContext(valid.requestContext));
      try {
        const answer = await context.with(turn.context, () => generateCall(messages, valid));
        turn.end(turnOutcome(answer));
        return answer;
      } catch (error) {
        turn.end({ code: error instanceof GatehouseError ? error.code : 'AGENT.RUN_FAILED', failed: true });
        throw error;
      }
    },
    async stream(messages, options) {
      const valid = validateCallOptions(options, 'stream');
      assertNoSystemMessages(messages, 'stream');
      const turn = startTurn(config, 'stream', auditContextFromRequestContext(valid.requestContext));
      // The step gate, the content policies, the hold or the caller's view may stop the run.
      const stopper = new AbortController();
      const { requestContext, gate, started } = startCall(valid, stopper);
      const abortSignal = valid.abortSignal === undefined ? stopper.signal : AbortSignal.any([valid.abortSignal, stopper.signal]);
      abortSignal.addEventListener('abort', () => gate.close(), { once: true });
      let output: Awaited<ReturnType<Agent['stream']>>;
      try {
        output = await context.with(turn.context, () => streamAgent.stream(messages, callOptions({ ...valid, abortSignal }, requestContext) as never));
      } catch {
        gate.close();
        turn.end({ code: 'AGENT.RUN_FAILED', failed: true });
        throw runFailed();
      }
      const runId = (): string | undefined => output.runId ?? valid.runId;
      const haltedResult = (halted: { by: string; reason: string }): GuardedGenerateResult =>
        Object.freeze({ stopReason: 'guardrail' as const, haltedBy: halted.by, text: '', finishReason: 'tripwire', tripwire: Object.freeze({ reason: halted.reason, code: 'GUARDRAIL.HALTED', processorId: GUARDRAIL_PROCESSOR_ID }), runId: runId() });
      const finish = async (text: string): Promise<GuardedGenerateResult> => {
        const finishReason = await output.finishReason;
        const tripwire = tripwireOf(output.tripwire);
        const halted = started?.run.halted;
        if (halted) return haltedResult(halted);
        if (approvalBudgetExhausted(requestContext)) return approvalBudgetStop(runId());
        if (gate.refused) return refusedResult(gate.refused, runId());
        const known = knownFinishReason(finishReason);
        return Object.freeze({ stopReason: tripwire ? ('tripwire' as const) : stopOf(known), text: tripwire ? '' : text, finishReason: tripwire ? 'tripwire' : known, tripwire, runId: runId() });
      };
      // One reader of the run's chunks, through the stages (text ends restored; with post-model
      // guardrails each text block held until judged, see answer-hold.ts; the caller's view), into
      // the caller's two streams. It reads as fast as the run writes, so result() settles whether
      // or not the caller reads, and a judgement never waits on the caller's pace.
      const hold = judgesAnswer
        ? createAnswerHold({
            judge: (text) => judgeAnswerOnce(guardrailOptions, text, requestContext, valid.abortSignal),
            stop: () => stopper.abort(),
            processorId: GUARDRAIL_PROCESSOR_ID,
          })
        : undefined;
      const content = createContentStage({
        judge: engine.streamJudge(),
        record: (channel, outcome) => engine.recordStreamRefusal(channel, outcome, requestContext),
        stop: () => stopper.abort(),
        signal: valid.abortSignal,
        processorId: engine.id,
        ...(streamAgent === agent ? {} : { final: (text: { answer: string; reasoning: string }) => engine.judgeFinalOutput(text, requestContext, valid.abortSignal) }),
      });
      const view = createCallerView({ gate, toolNames, judgeShown: (value) => engine.judgeShown(value, requestContext, valid.abortSignal), stop: () => stopper.abort() });
      const caller = callerStreams(runFailed);
      const stages = [createTextEndRestorer(), content, ...(hold ? [hold] : []), view];
      // Read in the turn's context, so the stream's decisions are the turn's children; the turn ends
      // once the run's last chunk has been read and judged.
      const pumped = context.with(turn.context, () => pumpStages(output.fullStream as ReadableStream<ChunkType>, stages, caller.sink));
      pumped.then(
        () => turn.end(gate.refused ? { code: gate.refused.code } : {}),
        () => turn.end({ code: 'AGENT.RUN_FAILED', failed: true }),
      );
      // How the call ended, once the reader has: a refusal, a halt, or the judged text.
      const settled = async (): Promise<GuardedGenerateResult> => {
        await pumped;
        if (approvalBudgetExhausted(requestContext) && !started?.run.halted) return approvalBudgetStop(runId());
        const judged = await content.ended;
        if (judged.kind === 'refused') return refusedResult(judged, runId(), engine.id);
        if (!hold) return finish(judged.text);
        const end = await hold.ended;
        if (end.kind === 'halted') {
          started!.run.halted ??= { by: end.by, reason: end.reason };
          return haltedResult(started!.run.halted);
        }
        if (end.kind === 'refused') {
          return Object.freeze({ stopReason: 'tripwire' as const, text: '', finishReason: 'tripwire', tripwire: Object.freeze({ reason: end.reason, code: end.code, processorId: GUARDRAIL_PROCESSOR_ID }), runId: runId() });
        }
        return finish(end.text);
      };
      return Object.freeze({
        fullStream: caller.fullStream,
        textStream: caller.textStream,
        async result(): Promise<GuardedGenerateResult> {
          try {
            return await settled();
          } catch {
            throw runFailed();
          }
        },
      });
    },
  };
  return Object.freeze(handle);
}

// How a turn ended, for its span: how it stopped and the refusal's code, never its text.
function turnOutcome(answer: GuardedGenerateResult): { readonly code?: string; readonly attributes: { readonly 'gatehouse.stop_reason': string } } {
  return { ...(answer.tripwire ? { code: answer.tripwire.code } : {}), attributes: { 'gatehouse.stop_reason': answer.stopReason } };
}

// What a call that failed throws: a provider's or a tool's error message may quote anything.
function runFailed(): GatehouseError {
  return new GatehouseError('AGENT.RUN_FAILED', 'The agent run failed', { category: 'internal' });
}

// The loop ended with tools still to call: `maxSteps` ran out (Duraton's `max-iterations` ceiling).
function stopOf(finishReason: string): 'finished' | 'max-iterations' {
  return finishReason === 'tool-calls' ? 'max-iterations' : 'finished';
}

// A call a gate refused (by default the step gate: the step's tools did not run); it shows no text.
function refusedResult(refusal: StepRefusal, runId: string | undefined, processorId: string = STEP_GATE_PROCESSOR_ID): GuardedGenerateResult {
  return Object.freeze({
    stopReason: 'tripwire' as const,
    text: '',
    finishReason: 'tripwire',
    tripwire: Object.freeze({ reason: refusal.reason, code: refusal.code, processorId }),
    runId,
  });
}

// The engine as an output processor of the final output only (its input side runs as an input processor).
function finalOutputOf(engine: PolicyEngine): Processor {
  return { id: engine.id, name: engine.name, processOutputResult: (args) => engine.processOutputResult(args) } as Processor;
}

/**
 * Memory may store and recall messages, but not call a model of its own: title generation sends
 * the user's message to a model and stores what comes back, and observational memory has a
 * model summarise the conversation — neither passes the input or output policies, the
 * guardrails or the audit trail. A memory that enables either is refused; so is a memory given
 * as a function of the request, whose configuration cannot be checked here.
 */
function assertGuardableMemory(memory: unknown): void {
  if (memory === undefined) return;
  if (typeof memory === 'function') throw new TypeError('createGuardedAgent: memory must be a memory instance, not a function (its configuration must be checkable)');
  const merged = (memory as { getMergedThreadConfig?: (config?: object) => unknown } | null)?.getMergedThreadConfig;
  if (typeof merged !== 'function') throw new TypeError('createGuardedAgent: memory must be a Mastra memory instance');
  const config = merged.call(memory, {}) as { generateTitle?: unknown; observationalMemory?: unknown } | undefined;
  if (config?.generateTitle !== undefined && config.generateTitle !== false) {
    throw new TypeError('createGuardedAgent: memory title generation calls a model outside the guard; turn generateTitle off');
  }
  if (config?.observationalMemory !== undefined && config.observationalMemory !== false) {
    throw new TypeError('createGuardedAgent: observational memory calls a model outside the guard; turn observationalMemory off');
  }
}
