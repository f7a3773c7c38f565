import { type JsonValue } from '@gatehouse/contracts';
import { GUARDRAIL_PLACEMENTS, type Guardrail, type GuardrailInput, type GuardrailPlacement, type GuardrailVerdict } from './types.js';

/** What the PII guardrail finds. */
export type PiiRule = 'email' | 'phone' | 'credit-card' | 'ipv4';
/** What it does on a find: `mask` (default) replaces each match with a token such as `[EMAIL]`. */
export type PiiAction = 'mask' | 'observe' | 'deny' | 'approve' | 'halt';

export interface PiiGuardrailOptions {
  /** Rules to apply, default all four. */
  readonly rules?: readonly PiiRule[];
  readonly action?: PiiAction;
  /** Default `pii`. */
  readonly name?: string;
  /** Default every placement. */
  readonly placements?: readonly GuardrailPlacement[];
}

const OCTET = '(?:25[0-5]|2[0-4]\\d|1\\d\\d|[1-9]?\\d)';
interface Detector {
  readonly pattern: RegExp;
  readonly token: string;
  readonly accept?: (match: string) => boolean;
}
const DETECTORS: Record<PiiRule, Detector> = {
  email: { pattern: /[A-Za-z0-9._%+-]+@[A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)*\.[A-Za-z]{2,}/g, token: '[EMAIL]' },
  // E.164: a plus, a non-zero country digit, at most 15 digits in all.
  phone: { pattern: /(?<![\w+])\+[1-9]\d{6,14}(?!\d)/g, token: '[PHONE]' },
  'credit-card': { pattern: /(?<![\d-])\d(?:[ -]?\d){12,18}(?![\d])/g, token: '[CARD]', accept: (m) => luhnValid(m.replace(/[ -]/g, '')) },
  ipv4: { pattern: new RegExp(`(?<![\\d.])${OCTET}(?:\\.${OCTET}){3}(?!\\.?\\d)`, 'g'), token: '[IPV4]' },
};
// Cards before phones and addresses: a card's digits never get half-masked by another rule.
const ORDER: readonly PiiRule[] = ['email', 'credit-card', 'phone', 'ipv4'];
const ACTIONS: ReadonlySet<string> = new Set(['mask', 'observe', 'deny', 'approve', 'halt']);

/** The Luhn checksum over a string of digits (13 to 19 of them for a card). */
export function luhnValid(digits: string): boolean {
  if (!/^\d{13,19}$/.test(digits)) return false;
  let sum = 0;
  for (let i = 0; i < digits.length; i += 1) {
    let d = digits.charCodeAt(digits.length - 1 - i) - 48;
    if (i % 2 === 1) {
      d *= 2;
      if (d > 9) d -= 9;
    }
    sum += d;
  }
  return sum % 10 === 0;
}

function maskText(text: string, rules: readonly PiiRule[], found: Set<PiiRule>): string {
  let out = text;
  for (const rule of ORDER) {
    if (!rules.includes(rule)) continue;
    const { pattern, token, accept } = DETECTORS[rule];
    out = out.replace(pattern, (match) => {
      if (accept && !accept(match)) return match;
      found.add(rule);
      return token;
    });
  }
  return out;
}

function maskJson(value: JsonValue, rules: readonly PiiRule[], found: Set<PiiRule>): JsonValue {
  if (typeof value === 'string') return maskText(value, rules, found);
  if (Array.isArray(value)) return value.map((item) => maskJson(item, rules, found));
  if (value !== null && typeof value === 'object') {
    const out: Record<string, JsonValue> = {};
    for (const key of Object.keys(value)) Object.defineProperty(out, key, { value: maskJson(value[key] as JsonValue, rules, found), enumerable: true, writable: true, configurable: true });
    return out;
  }
  return value;
}

/**
 * Finds emails, E.164 phone numbers, Luhn-valid card numbers and IPv4 addresses in text or in the
 * string leaves of JSON (object keys are not inspected). Masks by default: the payload is the value
 * with each match replaced by `[EMAIL]`, `[PHONE]`, `[CARD]` or `[IPV4]`. Detections are `pii.<rule>`.
 */
export function createPiiGuardrail(options: PiiGuardrailOptions = {}): Guardrail {
  if (options === null || typeof options !== 'object') throw new TypeError('createPiiGuardrail: options must be an object');
  const rules = options.rules ?? ORDER;
  if (!Array.isArray(rules) || rules.length === 0 || rules.some((r) => !(r in DETECTORS))) throw new TypeError('createPiiGuardrail: rules must list email, phone, credit-card or ipv4');
  const action = options.action ?? 'mask';
  if (!ACTIONS.has(action)) throw new TypeError('createPiiGuardrail: action must be mask, observe, deny, approve or halt');
  const placements = options.placements ?? GUARDRAIL_PLACEMENTS;
  if (!Array.isArray(placements) || placements.some((p) => !GUARDRAIL_PLACEMENTS.includes(p))) throw new TypeError('createPiiGuardrail: placements must be guardrail placements');
  const frozenRules = Object.freeze([...rules]);
  return Object.freeze({
    name: options.name ?? 'pii',
    placements: Object.freeze([...placements]),
    check({ value }: GuardrailInput): GuardrailVerdict {
      const found = new Set<PiiRule>();
      const masked = maskJson(value, frozenRules, found);
      if (found.size === 0) return { action: 'allow', outcome: 'complete', detections: [] };
      const detections = ORDER.filter((r) => found.has(r)).map((r) => `pii.${r}`);
      if (action === 'mask') return { action: 'mask', outcome: 'complete', detections, payload: masked, reason: 'pii.masked' };
      return { action, outcome: 'complete', detections, reason: 'pii.detected' };
    },
  });
}
