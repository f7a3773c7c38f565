import { type JsonValue } from '@gatehouse/contracts';
import { NOTHING_DECLARED, readDeclaredDetections, screenDetections } from '../policy-engine/declared-detections.js';
import { type GuardrailReasonCode, isGuardrailReasonCode } from './reasons.js';
import { type Guardrail, type GuardrailAction, type GuardrailInput, type GuardrailOutcome, type GuardrailVerdict } from './types.js';
import { readOptions } from '../policy-engine/policies/validation.js';

/** Why a guardrail could not judge: it threw, answered with something that is not a verdict, or ran out of time. */
export type GuardrailFault = 'threw' | 'invalid-verdict' | 'timeout';

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
const OUTCOMES: ReadonlySet<string> = new Set<GuardrailOutcome>(['complete', 'partial']);
const VERDICT_FIELDS: ReadonlySet<string> = new Set(['action', 'outcome', 'detections', 'reason', 'payload']);
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
});

const ALLOW: GuardrailVerdict = Object.freeze({ action: 'allow', outcome: 'complete', detections: Object.freeze([]) });

function faultVerdict(fault: GuardrailFault): GuardrailVerdict {
  return Object.freeze({ action: 'deny', outcome: 'partial', detections: Object.freeze([]), reason: GUARDRAIL_FAULT_REASON[fault] });
}

/** True for a JSON value (plain objects, arrays, finite numbers; no cycles, accessors or prototypes). */
export function isJsonValue(value: unknown, depth = 0, seen: Set<object> = new Set()): value is JsonValue {
  if (value === null || typeof value === 'string' || typeof value === 'boolean') return true;
  if (typeof value === 'number') return Number.isFinite(value);
  if (typeof value !== 'object' || depth > 64 || seen.has(value)) return false;
  seen.add(value);
  try {
    if (Array.isArray(value)) return value.every((item) => isJsonValue(item, depth + 1, seen));
    const proto = Object.getPrototypeOf(value) as unknown;
    if (proto !== Object.prototype && proto !== null) return false;
    for (const key of Object.keys(value)) {
      const descriptor = Object.getOwnPropertyDescriptor(value, key);
      if (!descriptor || !('value' in descriptor) || !isJsonValue(descriptor.value, depth + 1, seen)) return false;
    }
    return true;
  } finally {
    seen.delete(value);
  }
}

/** A deep, frozen copy of a JSON value (so a guardrail cannot change a payload after it was judged). */
export function freezeJson(value: JsonValue): JsonValue {
  if (value === null || typeof value !== 'object') return value;
  if (Array.isArray(value)) return Object.freeze(value.map(freezeJson)) as JsonValue;
  const out: Record<string, JsonValue> = {};
  for (const key of Object.keys(value)) {
    // defineProperty: a `__proto__` key stays an own data property instead of changing the prototype.
    Object.defineProperty(out, key, { value: freezeJson(value[key] as JsonValue), enumerable: true, writable: false, configurable: false });
  }
  return Object.freeze(out);
}

/**
 * Checks a guardrail's answer and returns a frozen copy of the known fields, or undefined when it is
 * not a valid verdict: unknown action or outcome, detections that are not names, a reason that is not
 * a string, a `mask`/`rewrite` without a JSON payload, a payload on any other action, an `allow` that
 * is only `partial`. A reason outside the catalogue is dropped, not refused: it is free text.
 */
export function validateVerdict(raw: unknown): GuardrailVerdict | undefined {
  if (raw === null || typeof raw !== 'object' || Array.isArray(raw)) return undefined;
  const record = raw as Record<string, unknown>;
  if (Object.keys(record).some((k) => !VERDICT_FIELDS.has(k))) return undefined;
  const { action, outcome, detections, reason, payload } = record;
  if (typeof action !== 'string' || !ACTIONS.has(action)) return undefined;
  if (typeof outcome !== 'string' || !OUTCOMES.has(outcome)) return undefined;
  if (!Array.isArray(detections) || detections.length > MAX_DETECTIONS || !detections.every((d) => typeof d === 'string' && DETECTION_NAME.test(d))) return undefined;
  if (reason !== undefined && typeof reason !== 'string') return undefined;
  const needsPayload = action === 'mask' || action === 'rewrite';
  if (needsPayload ? payload === undefined || !isJsonValue(payload) : payload !== undefined) return undefined;
  // "It could not judge everything, but allow" is not a clean bill of health.
  if (action === 'allow' && outcome === 'partial') return undefined;
  return Object.freeze({
    action: action as GuardrailAction,
    outcome: outcome as GuardrailOutcome,
    detections: Object.freeze([...(detections as string[])]),
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
    return { verdict: withDeclaredDetections(verdict, declaredBy(guardrail)) };
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
 * Runs the guardrails that declare `input.placement`, in order. The first verdict that is not
 * `allow` decides and the rest do not run. A guardrail that throws, times out or answers with an
 * invalid verdict decides `deny`/`partial`. Never throws for a guardrail's failure.
 */
export async function runGuardrails(guardrails: readonly Guardrail[], input: GuardrailInput, options: RunGuardrailsOptions = {}): Promise<GuardrailDecision> {
  readOptions('runGuardrails', options, ['timeoutMs']);
  const timeoutMs = options.timeoutMs ?? DEFAULT_TIMEOUT_MS;
  if (!Number.isSafeInteger(timeoutMs) || timeoutMs < 1) throw new TypeError('runGuardrails: timeoutMs must be a positive integer');
  const ran: string[] = [];
  const allowed = new Set<string>();
  for (const guardrail of guardrails) {
    if (!guardrail.placements.includes(input.placement)) continue;
    ran.push(guardrail.name);
    const { verdict, fault } = await checkOne(guardrail, input, timeoutMs);
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
