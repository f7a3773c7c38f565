/** Where content is judged: what the caller sends (`input`) or what the model produces (`output`). */
export type PolicyPhase = 'input' | 'output';

/**
 * Output channels: `answer` is client-visible text (and the only input channel),
 * `reasoning` the model's reasoning trace, `object` a structured-output JSON snapshot.
 */
export type OutputChannel = 'answer' | 'reasoning' | 'object';

export const POLICY_PHASES: readonly PolicyPhase[] = ['input', 'output'];
export const OUTPUT_CHANNELS: readonly OutputChannel[] = ['answer', 'reasoning', 'object'];

/** What a policy is told about the text it judges. */
export interface PolicyContext {
  readonly phase: PolicyPhase;
  readonly channel: OutputChannel;
  /**
   * Index of `text`'s first character within the whole segment. Streaming evaluation
   * passes a trailing window (never shorter than the policy's `holdBackChars` plus the
   * token run that straddles it), so `offset` may be > 0; input and final output pass
   * the whole segment with `offset` 0.
   */
  readonly offset: number;
  /** Length of the whole segment so far (`offset + text.length`). */
  readonly segmentLength: number;
  /** Segment length when this policy last judged this segment (0 the first time): for cadence. */
  readonly previousSegmentLength: number;
  /** True when the segment is complete (input, final output, end of a stream segment). */
  readonly final: boolean;
  /** Aborted when the call is aborted or the evaluation timed out. */
  readonly signal: AbortSignal;
}

/**
 * A policy's verdict. A denial may name what matched in `detections`: names the policy declared
 * (`PolicyEvaluator.detections`), never the matched text. They go to the audit trail; any name
 * not declared is replaced by `UNDECLARED_DETECTION`. The caller only ever sees the static
 * `policyDenialReason`.
 */
export type PolicyDecision =
  | { readonly allowed: true }
  | { readonly allowed: false; readonly detections?: readonly string[] };

/** What a detection identifier may look like; a declaration may hold nothing else. */
export const DETECTION_ID = /^[A-Za-z0-9][A-Za-z0-9._:-]{0,63}$/;

/**
 * What a record shows, once, in place of every detection its policy or guardrail did not declare:
 * a name chosen at run time could spell what was judged (`order:q7z`, a number, base64 of it).
 */
export const UNDECLARED_DETECTION = 'undeclared';

/** A content policy. Must be deterministic for a given text and context, and must not mutate state the engine can see. */
export interface PolicyEvaluator {
  /** Stable name, used in audit events and in `policyDenialReason`. */
  readonly name: string;
  /** Phases this policy judges. */
  readonly phases: readonly PolicyPhase[];
  /** Output channels this policy judges (input text is always the `answer` channel). */
  readonly channels: readonly OutputChannel[];
  /**
   * The longest match this policy can find, in characters: with hold-back the engine keeps
   * that many trailing characters unreleased until they are judged with what follows.
   * `undefined` or `Infinity`: no bound, the whole segment is buffered until it is final
   * and the policy always receives the whole segment. With a finite bound the engine also
   * holds (and passes) the whole run of non-whitespace characters at the tail, so a token
   * (a key, a JWT, an e-mail address) is judged whole before any of it is released.
   */
  readonly holdBackChars?: number;
  /**
   * Which text the policy judges: `normalized` (default) is the normalized view
   * (normalized-view.ts: NFKD, marks and format characters dropped, confusables folded to Latin,
   * whitespace runs as one space), and `holdBackChars` counts characters of that view; `source` is
   * the text as written, for a policy that must see it (a model-based classifier, a detector of
   * invisible characters), with `holdBackChars` in UTF-16 code units of it.
   */
  readonly reads?: 'normalized' | 'source';
  /**
   * Every detection name this policy may report, fixed when it is built (before any text is
   * seen); each matches `DETECTION_ID`. The engine copies it at construction, and a verdict's
   * name outside it is recorded as `UNDECLARED_DETECTION`. Absent: the policy's denials still
   * deny, but name nothing.
   */
  readonly detections?: readonly string[];
  evaluate(text: string, context: PolicyContext): PolicyDecision | Promise<PolicyDecision>;
}

/** The static text a caller sees when `name` denies content in `phase`: never the evaluator's own reason. */
export function policyDenialReason(name: string, phase: PolicyPhase): string {
  return `Content blocked by policy "${name}" (${phase})`;
}
