import { readOptions } from '@gatehouse/contracts';
import { RequestContext } from '@mastra/core/request-context';
import { type AuditLogger } from '../audit/audit-logger.js';
import { auditContextFromRequestContext } from '../context.js';
import { recordGateDecision } from '../internal/gate-audit.js';
import { actorFromRequestContext } from '../rbac/actor.js';
import { evaluateWhole, type PolicySnapshot, snapshotPolicies } from './evaluate.js';
import { type PolicyEvaluator, policyDenialReason } from './types.js';

export interface ContentPolicyGateOptions {
  readonly policies: readonly PolicyEvaluator[];
  readonly audit?: AuditLogger;
  readonly resource?: string;
  readonly evaluationTimeoutMs?: number;
}

export interface ContentPolicyGateInput {
  /** Exactly the text the downstream model will see. */
  readonly text: string;
  readonly requestContext?: RequestContext;
}

/** Only the outcome: policy names, reasons and content stay with the audit sink. */
export type ContentPolicyGateResult = { readonly status: 'allowed' } | { readonly status: 'denied' } | { readonly status: 'error' };

export interface ContentPolicyGate {
  check(input: ContentPolicyGateInput): Promise<ContentPolicyGateResult>;
}

const INPUT_FIELDS: ReadonlySet<string> = new Set(['text', 'requestContext']);

/**
 * The input when it is exactly `{ text, requestContext? }` with a string text and a RequestContext;
 * undefined otherwise. Read once, own data properties only, so a getter cannot answer twice.
 */
function readInput(input: unknown): { readonly text: string; readonly requestContext: RequestContext | undefined } | undefined {
  if (input === null || typeof input !== 'object' || Array.isArray(input)) return undefined;
  const keys = Reflect.ownKeys(input);
  if (keys.some((k) => typeof k !== 'string' || !INPUT_FIELDS.has(k))) return undefined;
  const text = Object.getOwnPropertyDescriptor(input, 'text');
  const rc = Object.getOwnPropertyDescriptor(input, 'requestContext');
  if (!text || !('value' in text) || typeof text.value !== 'string') return undefined;
  if (rc && (!('value' in rc) || (rc.value !== undefined && !(rc.value instanceof RequestContext)))) return undefined;
  return { text: text.value, requestContext: rc?.value as RequestContext | undefined };
}

/**
 * The input policies for trusted host code that hands text to a model outside Mastra's
 * processors. Every policy must judge input on the answer channel: one that never could is
 * refused at construction rather than silently skipped.
 */
export function createContentPolicyGate(options: ContentPolicyGateOptions): ContentPolicyGate {
  if (options === null || typeof options !== 'object') throw new TypeError('createContentPolicyGate: options are required');
  readOptions('createContentPolicyGate', options, ['policies', 'audit', 'resource', 'evaluationTimeoutMs']);
  const policies: readonly PolicySnapshot[] = snapshotPolicies(options.policies, 'createContentPolicyGate');
  if (policies.length === 0) throw new TypeError('createContentPolicyGate: at least one policy is required');
  for (const policy of policies) {
    if (!policy.phases.has('input') || !policy.channels.has('answer')) {
      throw new TypeError(`createContentPolicyGate: policy "${policy.name}" never judges input on the answer channel`);
    }
  }
  const timeoutMs = options.evaluationTimeoutMs ?? 5_000;
  if (!Number.isInteger(timeoutMs) || timeoutMs <= 0) throw new TypeError('createContentPolicyGate: evaluationTimeoutMs must be a positive integer');
  const audit = options.audit;
  const resource = options.resource ?? 'host-input';

  return Object.freeze({
    async check(input: ContentPolicyGateInput): Promise<ContentPolicyGateResult> {
      // Malformed input is the error state, never a throw: no policy runs on text it cannot trust.
      const read = readInput(input);
      if (read === undefined) {
        const code = 'POLICY.GATE_INPUT_INVALID';
        await recordGateDecision(audit, { boundary: 'input', action: 'host.input.policy', resource, decision: 'error', code, reason: 'Content policy gate input is malformed', context: {} });
        return { status: 'error' };
      }
      const text = read.text;
      const outcome = await evaluateWhole(policies, { phase: 'input', channel: 'answer', final: true, timeoutMs }, text);
      const actor = actorFromRequestContext(read.requestContext);
      const base = {
        boundary: 'input' as const,
        action: 'host.input.policy',
        resource,
        context: auditContextFromRequestContext(read.requestContext),
        ...(actor ? { actor: { ...actor, kind: actor.kind ?? 'human' } } : {}),
      };
      const recorded =
        outcome.kind === 'allowed'
          ? await recordGateDecision(audit, { ...base, decision: 'allowed', code: 'POLICY.ALLOWED', reason: 'content policies passed' })
          : outcome.kind === 'denied'
            ? await recordGateDecision(audit, {
                ...base,
                decision: 'denied',
                code: 'POLICY.DENIED',
                reason: policyDenialReason(outcome.policy, 'input'),
                policy: { name: outcome.policy, phase: 'input', channel: 'answer' },
                detections: outcome.detections,
              })
            : await recordGateDecision(audit, {
                ...base,
                decision: 'error',
                code: outcome.code,
                reason: 'Content policy evaluation failed',
                policy: { name: outcome.policy, phase: 'input', channel: 'answer' },
              });
      if (outcome.kind === 'denied') return { status: 'denied' };
      if (outcome.kind === 'error' || !recorded) return { status: 'error' };
      return { status: 'allowed' };
    },
  });
}
