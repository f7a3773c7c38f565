import { type AgentConfig } from '@mastra/core/agent';
import {
  type ProcessInputArgs,
  type ProcessOutputResultArgs,
  type ProcessOutputStreamArgs,
  type Processor,
} from '@mastra/core/processors';
import { type ChunkType } from '@mastra/core/stream';
import { type AuditLogger } from '../audit/audit-logger.js';
import { type AuditBoundary } from '../audit/types.js';
import { auditContextFromRequestContext } from '../context.js';
import { type Abort, AUDIT_UNAVAILABLE_REASON, isTripWire, recordGateDecision } from '../internal/gate-audit.js';
import { actorFromRequestContext } from '../rbac/actor.js';
import { applicable, type EvaluationOutcome, evaluateWhole, type PolicySnapshot, snapshotPolicies } from './evaluate.js';
import { canonicalSnapshot } from './canonical-snapshot.js';
import { extractInputText, extractMessageText, instructionTexts, leafText, systemMessagesOf } from './extract-text.js';
import { CHANNEL_OF, StreamJudge } from './stream-judge.js';
import { type OutputChannel, type PolicyEvaluator, type PolicyPhase, policyDenialReason } from './types.js';

export interface PolicyEngineOptions {
  readonly policies: readonly PolicyEvaluator[];
  /** Hold back each policy's trailing window so nothing unjudged is streamed. Default false. */
  readonly holdBack?: boolean;
  readonly audit?: AuditLogger;
  /** Audit resource name, e.g. `agent:support-bot`. */
  readonly resource?: string;
  /** Deadline of one policy evaluation; past it the evaluation fails closed. Default 5000 ms. */
  readonly evaluationTimeoutMs?: number;
  /**
   * The agent's own instructions, the operator's configuration: a system message equal to them
   * is not judged on input. Every other system message (one an input processor added or
   * rewrote, tagged or not) is. Absent: every system message is judged.
   */
  readonly trustedInstructions?: AgentConfig['instructions'];
}

/** The static reason a caller sees when a policy could not be evaluated. */
export const POLICY_ERROR_REASON = 'Content policy evaluation failed';

const OPTION_FIELDS = new Set(['policies', 'holdBack', 'audit', 'resource', 'evaluationTimeoutMs', 'trustedInstructions']);
const STREAM_STATE = Symbol.for('gatehouse.policy-engine.stream');
/** Key of the per-request processor state: an object chunk passed through this engine. */
const OBJECT_SEEN = 'gatehouse.policy-engine.object-seen';

/**
 * Content policies as a Mastra processor: input (`processInput`), the live stream
 * (`processOutputStream`, with optional hold-back) and the final output
 * (`processOutputResult`). Every body catches every error and aborts: a failing policy,
 * an unreadable message or a non-string chunk never lets content through.
 */
export class PolicyEngine implements Processor<'gatehouse-policy-engine'> {
  readonly id = 'gatehouse-policy-engine' as const;
  readonly name = 'gatehouse content policies';
  private readonly policies: readonly PolicySnapshot[];
  private readonly holdBack: boolean;
  private readonly audit: AuditLogger | undefined;
  private readonly resource: string;
  private readonly timeoutMs: number;
  private readonly trustedInstructions: unknown;
  private readonly objectOnly: readonly string[];

  constructor(options: PolicyEngineOptions) {
    if (options === null || typeof options !== 'object') throw new TypeError('PolicyEngine: options are required');
    const unknown = Object.keys(options).filter((k) => !OPTION_FIELDS.has(k));
    if (unknown.length > 0) throw new TypeError(`PolicyEngine: unknown option ${unknown.map((k) => `"${k}"`).join(', ')}`);
    if (options.holdBack !== undefined && typeof options.holdBack !== 'boolean') throw new TypeError('PolicyEngine: holdBack must be a boolean');
    const timeout = options.evaluationTimeoutMs ?? 5_000;
    if (!Number.isInteger(timeout) || timeout <= 0) throw new TypeError('PolicyEngine: evaluationTimeoutMs must be a positive integer');
    this.policies = snapshotPolicies(options.policies, 'PolicyEngine');
    // An output policy that reads only `object` judges nothing when no object chunk passes through
    // this processor (a parsed generate() result never does): the result is refused then, and that
    // refusal must be on the record.
    this.objectOnly = this.policies.filter((p) => p.phases.has('output') && p.channels.size === 1 && p.channels.has('object')).map((p) => p.name);
    if (this.objectOnly.length > 0 && options.audit === undefined) throw new TypeError('PolicyEngine: a policy that reads only the object channel needs an audit logger');
    this.holdBack = options.holdBack ?? false;
    this.audit = options.audit;
    this.resource = options.resource ?? 'agent';
    this.timeoutMs = timeout;
    this.trustedInstructions = options.trustedInstructions;
  }

  /** Names of the output policies that read only the object channel (for construction-time checks). */
  objectOnlyPolicies(): readonly string[] {
    return this.objectOnly;
  }

  /** Policies that can ever judge this phase and channel (for construction-time checks). */
  covers(phase: PolicyPhase, channel: OutputChannel): boolean {
    return applicable(this.policies, phase, channel).length > 0;
  }

  async processInput(args: ProcessInputArgs): Promise<ProcessInputArgs['messages']> {
    const started = performance.now();
    const { messages, abort, requestContext, abortSignal } = args;
    try {
      // Every part of every input message and every system message but the agent's own instructions.
      const system = systemMessagesOf(args);
      const trusted = await instructionTexts(this.trustedInstructions, requestContext);
      const whole = system === undefined || trusted === undefined ? 'unreadable' : extractInputText(messages, system, trusted);
      if (whole === 'unreadable') {
        await this.decide('input', 'input', 'answer', { kind: 'error', policy: 'message-reader', code: 'POLICY.EVALUATION_FAILED' }, requestContext, abort);
        return messages;
      }
      const outcome = await this.judgeWhole(whole, 'input', 'answer', abortSignal);
      await this.decide('input', 'input', 'answer', outcome, requestContext, abort, started);
      return messages;
    } catch (error) {
      return this.failClosed(error, 'input', 'input', requestContext, abort);
    }
  }

  async processOutputStream(args: ProcessOutputStreamArgs): Promise<ChunkType | null | undefined> {
    const { part, abort, requestContext, state, abortSignal } = args;
    try {
      if (part.type === 'object' || part.type === 'object-result') {
        if (state !== null && typeof state === 'object') (state as Record<string, unknown>)[OBJECT_SEEN] = true;
        return await this.judgeObject(part, requestContext, abort, abortSignal);
      }
      const shape = CHANNEL_OF[part.type];
      if (!shape) return part;
      const payload = (part as { payload?: { id?: unknown; text?: unknown } }).payload ?? {};
      const judge = streamJudgeOf(state, () => this.streamJudge());
      const id = String(payload.id ?? '');
      if (shape.edge === 'delta') {
        if (typeof payload.text !== 'string') {
          await this.decide('stream', 'output', shape.channel, { kind: 'error', policy: 'stream-reader', code: 'POLICY.INVALID_DECISION' }, requestContext, abort);
          return null;
        }
        const verdict = await judge.delta(shape.channel, id, payload.text, abortSignal);
        if (verdict.kind === 'refuse') {
          await this.decide('stream', 'output', shape.channel, verdict.outcome, requestContext, abort);
          return null;
        }
        if (verdict.text.length === 0) return null;
        return verdict.text === payload.text ? part : ({ ...part, payload: { ...payload, text: verdict.text } } as ChunkType);
      }
      // End of a segment: judged whole, then what was held is released.
      const verdict = await judge.end(shape.channel, id, abortSignal);
      // Allows are recorded once per channel by processOutputResult; here only refusals.
      if (verdict.kind === 'refuse') await this.decide('stream', 'output', shape.channel, verdict.outcome, requestContext, abort);
      if (verdict.kind === 'refuse' || verdict.text.length === 0) return part;
      // A processor returns one chunk per chunk: the held tail takes the end chunk's place.
      const deltaType = shape.channel === 'answer' ? 'text-delta' : 'reasoning-delta';
      return { ...part, type: deltaType, payload: { id: payload.id, text: verdict.text } } as ChunkType;
    } catch (error) {
      return this.failClosed(error, 'stream', 'output', requestContext, abort);
    }
  }

  /** A fresh judge of one stream's blocks under these policies (with this engine's hold-back). */
  streamJudge(): StreamJudge {
    return new StreamJudge(this.policies, this.holdBack, this.timeoutMs);
  }

  async processOutputResult(args: ProcessOutputResultArgs): Promise<ProcessOutputResultArgs['messages']> {
    const started = performance.now();
    const { messages, abort, requestContext, abortSignal } = args;
    try {
      const state = (args as { state?: Record<string, unknown> }).state;
      if (this.objectOnly.length > 0 && state?.[OBJECT_SEEN] !== true) {
        await this.decide('output', 'output', 'object', { kind: 'error', policy: this.objectOnly[0] as string, code: 'POLICY.EVALUATION_FAILED' }, requestContext, abort);
        return messages;
      }
      const text = extractMessageText(messages.filter((m) => m.role === 'assistant'));
      if (text === 'unreadable') {
        await this.decide('output', 'output', 'answer', { kind: 'error', policy: 'message-reader', code: 'POLICY.EVALUATION_FAILED' }, requestContext, abort);
        return messages;
      }
      await this.judgeOutput(text, requestContext, abort, abortSignal, started);
      return messages;
    } catch (error) {
      return this.failClosed(error, 'output', 'output', requestContext, abort);
    }
  }

  /**
   * The final output of a streamed call judged whole (the guarded stream's reader calls it at the
   * end, where no Mastra processor does): recorded like processOutputResult; the refusal the caller
   * is told, or undefined when it passed.
   */
  judgeFinalOutput(text: { readonly answer: string; readonly reasoning: string }, requestContext: unknown, signal: AbortSignal | undefined): Promise<{ reason: string; code: string } | undefined> {
    const started = performance.now();
    return this.recorded((abort) => this.judgeOutput(text, requestContext, abort, signal, started));
  }

  // Each output channel judged whole and recorded (an empty reasoning that passes is not).
  private async judgeOutput(text: { readonly answer: string; readonly reasoning: string }, requestContext: unknown, abort: Abort, signal: AbortSignal | undefined, startedAt?: number): Promise<void> {
    for (const channel of ['answer', 'reasoning'] as const) {
      const whole = text[channel];
      const outcome = await this.judgeWhole(whole, 'output', channel, signal);
      if (outcome.kind === 'allowed' && channel === 'reasoning' && whole.length === 0) continue;
      await this.decide('output', 'output', channel, outcome, requestContext, abort, startedAt);
    }
  }

  /**
   * The run's text up to the end of a step, judged whole before that step's tools run (the step
   * gate): every step's answer and reasoning so far (a phrase may start in one step and end in the
   * next; a block the stream never closed was never judged final). A refusal is recorded and
   * returned (static reason and code); an allow is not recorded (the final output is).
   */
  async judgeStep(text: { readonly answer: string; readonly reasoning: string }, requestContext: unknown, signal: AbortSignal | undefined): Promise<{ reason: string; code: string } | undefined> {
    for (const channel of ['answer', 'reasoning'] as const) {
      if (text[channel].length === 0) continue;
      const outcome = await this.judgeWhole(text[channel], 'output', channel, signal);
      if (outcome.kind !== 'allowed') return this.recordStreamRefusal(channel, outcome, requestContext);
    }
    return undefined;
  }

  /**
   * Whether the caller may see a tool's arguments or result on the stream: its canonical JSON,
   * judged by the output policies of the answer channel. A denial is recorded and the value
   * withheld (the run goes on: the tool's boundary, not the caller's, governs what the tool and the
   * model see). Anything that is not plain JSON, or fails to judge, is withheld.
   */
  async judgeShown(value: unknown, requestContext: unknown, signal: AbortSignal | undefined): Promise<{ shown: true; value: unknown } | { shown: false }> {
    const canonical = canonicalSnapshot(value);
    const text = canonical === undefined ? undefined : leafText(JSON.parse(canonical));
    if (canonical === undefined || text === undefined) return { shown: false };
    // Judged as its leaves, strings raw (JSON text would escape a newline inside a phrase); shown as the canonical copy.
    const outcome = await this.judgeWhole(text, 'output', 'answer', signal);
    if (outcome.kind === 'allowed') return { shown: true, value: JSON.parse(canonical) as unknown };
    const actor = actorFromRequestContext(requestContext);
    await recordGateDecision(this.audit, {
      boundary: 'stream',
      action: 'agent.stream.tool-content',
      resource: this.resource,
      context: auditContextFromRequestContext(requestContext),
      ...(actor ? { actor: { ...actor, kind: actor.kind ?? 'human' } } : {}),
      ...(outcome.kind === 'denied'
        ? { decision: 'denied' as const, code: 'POLICY.DENIED', reason: policyDenialReason(outcome.policy, 'output'), detections: outcome.detections }
        : { decision: 'error' as const, code: outcome.code, reason: POLICY_ERROR_REASON }),
      policy: { name: outcome.policy, phase: 'output', channel: 'answer' },
    });
    return { shown: false };
  }

  // One evaluation of a whole text (not a stream window): `final` unless a snapshot says otherwise.
  private judgeWhole(text: string, phase: PolicyPhase, channel: OutputChannel, signal: AbortSignal | undefined, final = true): EvaluationOutcome | Promise<EvaluationOutcome> {
    return evaluateWhole(this.policies, { phase, channel, final, signal, timeoutMs: this.timeoutMs }, text);
  }

  /**
   * A structured-output snapshot: judged as canonical JSON on the object channel, and the
   * canonical clone (not the original, which could change after judging) is forwarded.
   */
  private async judgeObject(part: ChunkType, requestContext: unknown, abort: Abort, signal: AbortSignal | undefined): Promise<ChunkType> {
    const snapshot = (part as { object?: unknown }).object;
    const canonical = canonicalSnapshot(snapshot);
    if (canonical === undefined) {
      await this.decide('stream', 'output', 'object', { kind: 'error', policy: 'object-reader', code: 'POLICY.INVALID_DECISION' }, requestContext, abort);
      return part;
    }
    const outcome = await this.judgeWhole(canonical, 'output', 'object', signal, part.type === 'object-result');
    if (outcome.kind !== 'allowed') await this.decide('stream', 'output', 'object', outcome, requestContext, abort);
    return { ...part, object: JSON.parse(canonical) as unknown } as ChunkType;
  }

  /**
   * Records a stream refusal found outside Mastra's processors (the guarded agent's own stream
   * reader) and returns what the caller is told: the static reason and code, never content.
   */
  async recordStreamRefusal(channel: OutputChannel, outcome: Exclude<EvaluationOutcome, { kind: 'allowed' }>, requestContext: unknown): Promise<{ reason: string; code: string }> {
    const told = await this.recorded((abort) => this.decide('stream', 'output', channel, outcome, requestContext, abort));
    return told ?? { reason: POLICY_ERROR_REASON, code: 'POLICY.EVALUATION_FAILED' };
  }

  // Runs `work` with an abort that records what the caller would be told instead of throwing a TripWire.
  private async recorded(work: (abort: Abort) => Promise<void>): Promise<{ reason: string; code: string } | undefined> {
    let told: { reason: string; code: string } | undefined;
    const abort: Abort = (reason, options) => {
      const code = (options?.metadata as { code?: unknown } | undefined)?.code;
      told = { reason: reason ?? POLICY_ERROR_REASON, code: typeof code === 'string' ? code : 'POLICY.EVALUATION_FAILED' };
      throw STOP;
    };
    try {
      await work(abort);
    } catch (error) {
      if (error !== STOP) throw error;
    }
    return told;
  }

  /** Records the outcome and aborts on anything but an allow (or when the record is refused). */
  private async decide(
    boundary: AuditBoundary,
    phase: PolicyPhase,
    channel: OutputChannel,
    outcome: EvaluationOutcome,
    requestContext: unknown,
    abort: Abort,
    startedAt?: number,
  ): Promise<void> {
    const actor = actorFromRequestContext(requestContext);
    const base = {
      boundary,
      action: `agent.${boundary === 'input' ? 'input' : boundary === 'stream' ? 'stream' : 'output'}.policy`,
      resource: this.resource,
      context: auditContextFromRequestContext(requestContext),
      ...(actor ? { actor: { ...actor, kind: actor.kind ?? 'human' } } : {}),
    } as const;
    if (outcome.kind === 'allowed') {
      const recorded = await recordGateDecision(this.audit, { ...base, decision: 'allowed', code: 'POLICY.ALLOWED', reason: 'content policies passed', policy: { name: 'all', phase, channel } }, startedAt);
      if (!recorded) abort(AUDIT_UNAVAILABLE_REASON, { metadata: { code: 'AUDIT.REQUIRED_SINK_FAILED' } });
      return;
    }
    if (outcome.kind === 'denied') {
      const reason = policyDenialReason(outcome.policy, phase);
      await recordGateDecision(this.audit, {
        ...base,
        decision: 'denied',
        code: 'POLICY.DENIED',
        reason,
        policy: { name: outcome.policy, phase, channel },
        detections: outcome.detections,
      }, startedAt);
      abort(reason, { metadata: { code: 'POLICY.DENIED', policy: outcome.policy, phase, channel } });
    }
    await recordGateDecision(this.audit, {
      ...base,
      decision: 'error',
      code: outcome.code,
      reason: POLICY_ERROR_REASON,
      policy: { name: outcome.policy, phase, channel },
    }, startedAt);
    abort(POLICY_ERROR_REASON, { metadata: { code: outcome.code, phase, channel } });
  }

  private async failClosed(error: unknown, boundary: AuditBoundary, phase: PolicyPhase, requestContext: unknown, abort: Abort): Promise<never> {
    if (isTripWire(error)) throw error;
    await this.decide(boundary, phase, 'answer', { kind: 'error', policy: 'engine', code: 'POLICY.EVALUATION_FAILED' }, requestContext, abort);
    // decide() always aborts on an error outcome; this keeps the type checker honest.
    throw error;
  }
}

function streamJudgeOf(state: Record<string, unknown> | undefined, create: () => StreamJudge): StreamJudge {
  const holder = (state ?? {}) as Record<symbol, StreamJudge | undefined>;
  let judge = holder[STREAM_STATE];
  if (!judge) {
    judge = create();
    holder[STREAM_STATE] = judge;
  }
  return judge;
}

// Ends decide()'s abort when a refusal is only recorded (recordStreamRefusal).
const STOP = Symbol('recorded');
