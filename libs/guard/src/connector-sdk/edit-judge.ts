import { isJsonValue, type JsonValue } from '@gatehouse/contracts';

/**
 * What the `tool-args` guardrails say of a reviewer's edited arguments: run them as given (or as a
 * mask or rewrite changed them), or refuse the call.
 */
export type EditJudgement = { readonly kind: 'run'; readonly input: JsonValue } | { readonly kind: 'refused' };

/** Judges the arguments a reviewer approved with edits, as the proposed call was judged. */
export type EditJudge = (edited: JsonValue) => Promise<EditJudgement>;

// Keyed by the per-call RequestContext: the judge is set by host code (the guarded agent), never by a
// tool, a request body or model output, as the egress hook is.
const judges = new WeakMap<object, EditJudge>();

/** Registers the judge of one call's context (the guarded agent does this when `tool-args` guardrails run). */
export function setEditJudge(requestContext: object, judge: EditJudge): void {
  judges.set(requestContext, judge);
}

export function editJudgeOf(requestContext: unknown): EditJudge | undefined {
  return requestContext !== null && typeof requestContext === 'object' ? judges.get(requestContext) : undefined;
}

/**
 * A reviewer's approved edit, after the `tool-args` guardrails of the guarded agent that made the call
 * judged it as they judged the proposed call (a journal makes it a step of the run, replayed on a
 * resumed one). No judge (no guarded agent, or no `tool-args` guardrail): the edit runs as the schema
 * accepted it. A mask or rewrite of the edit must pass the schema again (`parse`); an edit that is not
 * JSON, or a judge that throws, is refused.
 */
export async function judgeEdit(
  requestContext: unknown,
  edited: unknown,
  parse: (value: unknown) => { readonly success: true; readonly data: unknown } | { readonly success: false },
): Promise<{ readonly kind: 'run'; readonly input: unknown } | { readonly kind: 'refused' | 'invalid' }> {
  const judge = editJudgeOf(requestContext);
  if (judge === undefined) return { kind: 'run', input: edited };
  if (!isJsonValue(edited)) return { kind: 'refused' };
  let judged: EditJudgement;
  try {
    judged = await judge(edited);
  } catch {
    return { kind: 'refused' };
  }
  if (judged.kind === 'refused') return judged;
  if (judged.input === edited) return { kind: 'run', input: edited };
  const reparsed = parse(judged.input);
  return reparsed.success ? { kind: 'run', input: reparsed.data } : { kind: 'invalid' };
}
