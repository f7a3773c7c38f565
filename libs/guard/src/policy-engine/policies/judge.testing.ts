// For the policy specs: one call of a policy with a complete context (whole segment by default).
import type { PolicyContext, PolicyDecision, PolicyEvaluator } from '../types.js';

const signal = new AbortController().signal;

/** Evaluates `policy` on `text` as the engine would; `context` overrides any field. */
export function judge(policy: PolicyEvaluator, text: string, context: Partial<PolicyContext> = {}): Promise<PolicyDecision> {
  const offset = context.offset ?? 0;
  return Promise.resolve(
    policy.evaluate(text, {
      phase: 'output',
      channel: 'answer',
      offset,
      segmentLength: offset + text.length,
      previousSegmentLength: 0,
      final: true,
      signal,
      ...context,
    }),
  );
}
