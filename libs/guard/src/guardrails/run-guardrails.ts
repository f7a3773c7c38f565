import { freezeJson, isJsonValue, type JsonValue, readOptions } from '@gatehouse/contracts';
import { NOTHING_DECLARED, readDeclaredDetections, screenDetections } from '../policy-engine/declared-detections.js';
import { type GuardrailReasonCode, isGuardrailReasonCode } from './reasons.js';
import { type Guardrail, type GuardrailAction, type GuardrailInput, type GuardrailOutcome, type GuardrailVerdict } from './types.js';

/**
 * Why a guardrail could not judge: it threw, answered with something that is not a verdict, ran
 * out of time, or the check failed outright (the guardrail answered outcome `failed`, or its
 * decision could not be recorded or read back).
 */
export type GuardrailFault = 'threw' | 'invalid-verdict' | 'timeout' | 'failed';

/** What `runGuardrails` decided: the deciding verdict and the guardrail that gave it. */
export interface GuardrailDecision {
  /**
   * The first verdict that is not `allow`, or `allow`/`complete` when every guardrail allowed
   * (carrying the allowing verdicts' detections, in order, so a record of an allow still names
   * e.g. the policy bundle version it was made under).
   */
  readonly verdict: GuardrailVerdict;
  /** Name of the guardrail that decided; absent when all allowed (or none applied). */
  readonly by: string | undefined;
  /** Guardrails that ran (declared the placement), in order, up to the deciding one. */
  readonly ran: readonly string[];
  /** Set when the verdict is a fault turned into `deny`/`partial`. */
  readonly fault?: GuardrailFault;
}

export interface RunGuardrailsOptions {
  /** Deadline of one guardrail's check, ms (default 5000); past it the check is a fault. */
  readonly timeoutMs?: number;
}

const ACTIONS: ReadonlySet<string> = new Set<GuardrailAction>(['allow', 'observe', 'mask', 'rewrite', 'deny', 'approve', 'halt']);
const OUTCOMES: ReadonlySet<string> = new Set<GuardrailOutcome>(['complete', 'partial', 'failed']);
// `by` is Duraton's name of the deciding guardrail: accepted and never read (the runner knows who answered).
const VERDICT_FIELDS: ReadonlySet<string> = new Set(['action', 'outcome', 'detections', 'reason', 'payload', 'by']);
/**
 * A detection is a name (`pii.email`, `schema.$ref`), never matched text; and a declared one
 * (`Guardrail.detections`).
 */
const DETECTION_NAME = /^[A-Za-z0-9][A-Za-z0-9._:@/$-]{0,127}$/;
const MAX_DETECTIONS = 64;
const DEFAULT_TIMEOUT_MS = 5_000;

/** Reason codes of the verdicts the runner makes itself. */
export const GUARDRAIL_FAULT_REASON: Readonly<Record<GuardrailFault, GuardrailReasonCode>> = Object.freeze({
  threw: 'guardrail.fault',
  'invalid-verdict': 'guardrail.invalid-verdict',
  timeout: 'guardrail.timeout',
  failed: 'guardrail.failed',
});

const ALLOW: GuardrailVerdict = Object.freeze({ action: 'allow', outcome: 'complete', detections: Object.freeze([]) });

function faultVerdict(fault: GuardrailFault): GuardrailVerdict {
  return Object.freeze({ action: 'deny', outcome: fault === 'failed' ? 'failed' : 'partial', detections: Object.freeze([]), reason: GUARDRAIL_FAULT_REASON[fault] });
}

/**
 * The decision of a check that failed outright, around the guardrails rather than in one: its
 * decision could not be recorded or read back, or the value was not JSON. Deny, outcome `failed`.
 */
export function failedDecision(reason: GuardrailReasonCode, by: string | undefined, ran: readonly string[] = []): GuardrailDecision {
  return Object.freeze({
    verdict: Object.freeze({ action: 'deny', outcome: 'failed', detections: Object.freeze([]), reason }),
    by,
    ran: Object.freeze([...ran]),
    fault: 'failed',
  });
}

/**
 * The names of a verdict's detections: each a name, or `{ rule, detected }` (Duraton's form), which
 * names `rule` when `detected` is true and nothing when it is false. Only those two fields are read,
 * so nothing else a detection carries (a span, a match) can reach a record. Undefined when invalid.
 */
function detectionNames(detections: unknown): string[] | undefined {
  if (!Array.isArray(detections) || detections.length > MAX_DETECTIONS) return undefined;
  const names: string[] = [];
  for (const detection of detections as unknown[]) {
    if (typeof detection === 'string') {
      if (!DETECTION_NAME.test(detection)) return undefined;
      names.push(detection);
      continue;
    }
    if (detection === null || typeof detection !== 'object' || Array.isArray(detection)) return undefined;
    const { rule, detected } = detection as { rule?: unknown; detected?: unknown };
    if (typeof rule !== 'string' || !DETECTION_NAME.test(rule) || typeof detected !== 'boolean') return undefined;
    if (detected && !names.includes(rule)) names.push(rule);
  }
  return names;
}

/**
 * A verdict whose check failed outright enforces nothing it asked for: it denies (a `halt` still
 * halts, being stronger), names the catalogue reason it gave or `guardrail.failed`, and carries no payload.
 */
function failedVerdict(action: string, detections: readonly string[], reason: unknown): GuardrailVerdict {
  return Object.freeze({
    action: action === 'halt' ? 'halt' : 'deny',
    outcome: 'failed',
    detections: Object.freeze([...detections]),
    reason: isGuardrailReasonCode(reason) ? reason : GUARDRAIL_FAULT_REASON.failed,
  });
}

/**
 * Checks a guardrail's answer and returns a frozen copy of the known fields, or undefined when it is
 * not a valid verdict: unknown action or outcome, detections that are neither names nor `{ rule,
 * detected }`, a reason that is not a string, a `mask`/`rewrite` without a JSON payload, a payload on
 * any other action, an `allow` that is only `partial`. A reason outside the catalogue is dropped, not
 * refused: it is free text. Outcome `failed` becomes deny (or halt), whatever action it came with.
 */
export function validateVerdict(raw: unknown): GuardrailVerdict | undefined {
  if (raw === null || typeof raw !== 'object' || Array.isArray(raw)) return undefined;
  const record = raw as Record<string, unknown>;
  if (Object.keys(record).some((k) => !VERDICT_FIELDS.has(k))) return undefined;
  const { action, outcome, reason, payload } = record;
  if (typeof action !== 'string' || !ACTIONS.has(action)) return undefined;
  if (typeof outcome !== 'string' || !OUTCOMES.has(outcome)) return undefined;
  const detections = detectionNames(record['detections']);
  if (detections === undefined) return undefined;
  if (reason !== undefined && typeof reason !== 'string') return undefined;
  if (outcome === 'failed') return failedVerdict(action, detections, reason);
  const needsPayload = action === 'mask' || action === 'rewrite';
  if (needsPayload ? payload === undefined || !isJsonValue(payload) : payload !== undefined) return undefined;
  // "It could not judge everything, but allow" is not a clean bill of health.
  if (action === 'allow' && outcome === 'partial') return undefined;
  return Object.freeze({
    action: action as GuardrailAction,
    outcome: outcome as GuardrailOutcome,
    detections: Object.freeze(detections),
    ...(isGuardrailReasonCode(reason) ? { reason } : {}),
    ...(needsPayload ? { payload: freezeJson(payload as JsonValue) } : {}),
  });
}

async function checkOne(guardrail: Guardrail, input: GuardrailInput, timeoutMs: number): Promise<{ verdict: GuardrailVerdict; fault?: GuardrailFault }> {
  const deadline = new AbortController();
  const signal = AbortSignal.any([input.signal, deadline.signal]);
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<'timeout'>((resolve) => {
    timer = setTimeout(() => {
      deadline.abort();
      resolve('timeout');
    }, timeoutMs);
  });
  try {
    const answer = await Promise.race([Promise.resolve().then(() => guardrail.check({ ...input, signal })), timeout]);
    if (answer === 'timeout') return { verdict: faultVerdict('timeout'), fault: 'timeout' };
    const verdict = validateVerdict(answer);
    if (!verdict) return { verdict: faultVerdict('invalid-verdict'), fault: 'invalid-verdict' };
    const declared = withDeclaredDetections(verdict, declaredBy(guardrail));
    return verdict.outcome === 'failed' ? { verdict: declared, fault: 'failed' } : { verdict: declared };
  } catch {
    // The error's message may quote the value: it is dropped, only the fault is kept.
    return { verdict: faultVerdict('threw'), fault: 'threw' };
  } finally {
    clearTimeout(timer);
  }
}

// Parsed once per declaration array (a getter that returns the same array costs nothing more).
const declarations = new WeakMap<object, ReadonlySet<string>>();

/** The names `guardrail` declares now; a declaration that is no longer valid declares nothing. */
function declaredBy(guardrail: Guardrail): ReadonlySet<string> {
  let listed: unknown;
  try {
    listed = guardrail.detections;
    if (listed === undefined) return NOTHING_DECLARED;
    const known = declarations.get(listed as object);
    if (known) return known;
    const parsed = readDeclaredDetections(listed, '', DETECTION_NAME);
    declarations.set(listed as object, parsed);
    return parsed;
  } catch {
    return NOTHING_DECLARED;
  }
}

/** The verdict with its undeclared detection names replaced by one `undeclared` marker. */
function withDeclaredDetections(verdict: GuardrailVerdict, declared: ReadonlySet<string>): GuardrailVerdict {
  const detections = screenDetections(verdict.detections, declared, MAX_DETECTIONS);
  const same = detections.length === verdict.detections.length && detections.every((d, i) => d === verdict.detections[i]);
  return same ? verdict : Object.freeze({ ...verdict, detections });
}

/**
 * A verdict read back from a record, its detections screened again against what `guardrails` (those
 * that may have given it) declare now: a record written elsewhere cannot name content either.
 */
export function screenRecordedVerdict(verdict: GuardrailVerdict, guardrails: readonly Guardrail[]): GuardrailVerdict {
  const declared = new Set<string>();
  for (const guardrail of guardrails) for (const name of declaredBy(guardrail)) declared.add(name);
  return withDeclaredDetections(verdict, declared);
}

/**
 * Throws a TypeError unless `guardrails` is an array of guardrails with unique names, each with a
 * valid `detections` declaration when it has one.
 */
export function validateGuardrails(guardrails: unknown, where: string): readonly Guardrail[] {
  if (!Array.isArray(guardrails)) throw new TypeError(`${where}: guardrails must be an array`);
  const names = new Set<string>();
  guardrails.forEach((g: unknown, index) => {
    const candidate = g as Partial<Guardrail> | null;
    if (candidate === null || typeof candidate !== 'object' || typeof candidate.name !== 'string' || candidate.name.length === 0 || typeof candidate.check !== 'function' || !Array.isArray(candidate.placements)) {
      throw new TypeError(`${where}: guardrails[${index}] must have a name, placements and a check function`);
    }
    if (names.has(candidate.name)) throw new TypeError(`${where}: guardrail name "${candidate.name}" is used twice`);
    readDeclaredDetections(candidate.detections, `${where}: guardrail "${candidate.name}"`, DETECTION_NAME);
    names.add(candidate.name);
  });
  return Object.freeze([...(guardrails as Guardrail[])]);
}

/**
 * Runs the guardrails that declare `input.placement`, in order, each on a frozen copy of the value.
 * The first verdict that is not `allow` decides and the rest do not run. A guardrail that throws,
 * times out or answers with an invalid verdict decides `deny`/`partial`; one that answers outcome
 * `failed` decides deny (or halt) with outcome `failed`. Never throws for a guardrail's failure.
 */
export async function runGuardrails(guardrails: readonly Guardrail[], input: GuardrailInput, options: RunGuardrailsOptions = {}): Promise<GuardrailDecision> {
  readOptions('runGuardrails', options, ['timeoutMs']);
  const timeoutMs = options.timeoutMs ?? DEFAULT_TIMEOUT_MS;
  if (!Number.isSafeInteger(timeoutMs) || timeoutMs < 1) throw new TypeError('runGuardrails: timeoutMs must be a positive integer');
  const ran: string[] = [];
  const allowed = new Set<string>();
  // Each guardrail judges a frozen copy: one that writes to the value fails its check instead of
  // changing, unrecorded, what the next guardrail or the tool gets (a change is a mask or rewrite).
  const judged = guardrails.some((g) => g.placements.includes(input.placement)) ? { ...input, value: freezeJson(input.value) } : input;
  for (const guardrail of guardrails) {
    if (!guardrail.placements.includes(input.placement)) continue;
    ran.push(guardrail.name);
    const { verdict, fault } = await checkOne(guardrail, judged, timeoutMs);
    if (verdict.action !== 'allow') return Object.freeze({ verdict, by: guardrail.name, ran: Object.freeze(ran), ...(fault ? { fault } : {}) });
    for (const detection of verdict.detections) if (allowed.size < MAX_DETECTIONS) allowed.add(detection);
  }
  const verdict = allowed.size === 0 ? ALLOW : Object.freeze({ ...ALLOW, detections: Object.freeze([...allowed]) });
  return Object.freeze({ verdict, by: undefined, ran: Object.freeze(ran) });
}

/** True when a decision stops the value: `deny`, `approve`, `halt` (and every fault). */
export function isTrip(verdict: GuardrailVerdict): boolean {
  return verdict.action === 'deny' || verdict.action === 'approve' || verdict.action === 'halt';
}
