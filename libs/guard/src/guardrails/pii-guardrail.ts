import { type JsonValue, readOptions } from '@gatehouse/contracts';
import { scanCards, scanEmails, scanIpv4s, scanPhones } from '../policy-engine/policies/detectors/pii-detection.js';
import { NormalizedText } from '../policy-engine/normalized-view.js';
import { findAll, type Scanner } from '../policy-engine/policies/detectors/scan.js';
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

// The same detection as `piiSecrets` (one implementation, in policy-engine/policies/detectors):
// the guardrail masks every match the shared scanners report.
const DETECTORS: Record<PiiRule, { readonly scan: Scanner; readonly token: string }> = {
  email: { scan: scanEmails, token: '[EMAIL]' },
  phone: { scan: scanPhones, token: '[PHONE]' },
  'credit-card': { scan: scanCards, token: '[CARD]' },
  ipv4: { scan: scanIpv4s, token: '[IPV4]' },
};
// Cards before phones and addresses: a card's digits never get half-masked by another rule.
const ORDER: readonly PiiRule[] = ['email', 'credit-card', 'phone', 'ipv4'];
const ACTIONS: ReadonlySet<string> = new Set(['mask', 'observe', 'deny', 'approve', 'halt']);

export { luhnValid } from '../policy-engine/policies/detectors/pii-detection.js';

// The source ranges `scan` finds in `text`: on the text as written and on its normalized view
// (full-width digits, look-alike letters, zero-width characters between digits), mapped back.
function rangesOf(scan: Scanner, text: string, view: NormalizedText | undefined): { start: number; end: number }[] {
  const ranges = findAll(scan, text).map(({ start, end }) => ({ start, end }));
  if (view !== undefined) for (const { start, end } of findAll(scan, view.text)) ranges.push({ start: view.sourceOffset(start), end: view.sourceOffset(end) });
  ranges.sort((a, b) => a.start - b.start || b.end - a.end);
  const merged: { start: number; end: number }[] = [];
  for (const range of ranges) {
    const last = merged[merged.length - 1];
    if (last !== undefined && range.start < last.end) last.end = Math.max(last.end, range.end);
    else if (range.end > range.start) merged.push({ ...range });
  }
  return merged;
}

function maskText(text: string, rules: readonly PiiRule[], found: Set<PiiRule>): string {
  let out = text;
  for (const rule of ORDER) {
    if (!rules.includes(rule)) continue;
    const { scan, token } = DETECTORS[rule];
    const folded = new NormalizedText().append(out);
    const matches = rangesOf(scan, out, folded.same ? undefined : folded);
    if (matches.length === 0) continue;
    found.add(rule);
    let masked = '';
    let from = 0;
    for (const { start, end } of matches) {
      masked += out.slice(from, start) + token;
      from = end;
    }
    out = masked + out.slice(from);
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
 * Finds emails, phone numbers (E.164 and North-American), card numbers (Luhn-valid, in an issuer's
 * range) and IPv4 addresses in text or in the string leaves of JSON (object keys are not inspected). Masks by default: the payload is the value
 * with each match replaced by `[EMAIL]`, `[PHONE]`, `[CARD]` or `[IPV4]`. Detections are `pii.<rule>`.
 */
export function createPiiGuardrail(options: PiiGuardrailOptions = {}): Guardrail {
  if (options === null || typeof options !== 'object') throw new TypeError('createPiiGuardrail: options must be an object');
  readOptions('createPiiGuardrail', options, ['rules', 'action', 'name', 'placements']);
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
    detections: Object.freeze(frozenRules.map((r) => `pii.${r}`)),
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
