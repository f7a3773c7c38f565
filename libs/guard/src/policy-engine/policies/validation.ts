// Construction-time checks of single option values shared by the content policies (the bag
// itself is read by `readOptions` from @gatehouse/contracts). Every failure is a TypeError
// naming the option and what was expected; messages never include the offending value,
// because option values (patterns, allowlists) are often secrets themselves.
import { types } from 'node:util';
import { describeType } from '@gatehouse/contracts';
import { DETECTION_ID, OUTPUT_CHANNELS, POLICY_PHASES, type OutputChannel, type PolicyPhase } from '../types.js';

/** Largest delay `setTimeout` honours; longer ones fire immediately. */
export const MAX_TIMER_MS = 2_147_483_647;

/** A policy name: a short identifier, safe in audit events and denial reasons. */
export function readName(where: string, value: unknown, fallback: string): string {
  if (value === undefined) return fallback;
  if (typeof value !== 'string') throw new TypeError(`${where}: name must be a string, got ${describeType(value)}`);
  if (!DETECTION_ID.test(value)) {
    throw new TypeError(
      `${where}: name must be 1-64 characters of letters, digits, '.', '_', ':' or '-', starting with a letter or digit`,
    );
  }
  return value;
}

/** A non-empty list of distinct phases, frozen. */
export function readPhases(where: string, value: unknown, fallback: readonly PolicyPhase[]): readonly PolicyPhase[] {
  return readEnumList(where, 'phases', value, fallback, POLICY_PHASES);
}

/** A non-empty list of distinct output channels, frozen. */
export function readChannels(
  where: string,
  value: unknown,
  fallback: readonly OutputChannel[],
): readonly OutputChannel[] {
  return readEnumList(where, 'channels', value, fallback, OUTPUT_CHANNELS);
}

/** A non-empty list of distinct members of `allowed`, frozen. */
export function readEnumList<T extends string>(
  where: string,
  field: string,
  value: unknown,
  fallback: readonly T[],
  allowed: readonly T[],
): readonly T[] {
  if (value === undefined) return Object.freeze([...fallback]);
  if (!Array.isArray(value)) throw new TypeError(`${where}: ${field} must be an array, got ${describeType(value)}`);
  if (value.length === 0) throw new TypeError(`${where}: ${field} must not be empty`);
  const out: T[] = [];
  for (let i = 0; i < value.length; i++) {
    const item: unknown = value[i];
    if (typeof item !== 'string' || !(allowed as readonly string[]).includes(item)) {
      throw new TypeError(`${where}: ${field}[${i}] must be one of ${allowed.join(', ')}`);
    }
    if ((out as string[]).includes(item)) throw new TypeError(`${where}: ${field}[${i}] repeats an earlier entry`);
    out.push(item as T);
  }
  return Object.freeze(out);
}

/** An integer in [min, max]; `undefined` gives `fallback`. */
export function readInteger(
  where: string,
  field: string,
  value: unknown,
  fallback: number,
  min: number,
  max: number = Number.MAX_SAFE_INTEGER,
): number {
  if (value === undefined) return fallback;
  if (typeof value !== 'number') throw new TypeError(`${where}: ${field} must be a number, got ${describeType(value)}`);
  if (!Number.isInteger(value) || value < min || value > max) {
    throw new TypeError(`${where}: ${field} must be an integer from ${min} to ${max}`);
  }
  return value;
}

/** A hold-back hint: a positive integer or `Infinity`; `undefined` stays `undefined`. */
export function readHoldBackChars(where: string, value: unknown): number | undefined {
  if (value === undefined) return undefined;
  if (typeof value !== 'number') {
    throw new TypeError(`${where}: holdBackChars must be a number, got ${describeType(value)}`);
  }
  if (value === Number.POSITIVE_INFINITY) return value;
  if (!Number.isSafeInteger(value) || value < 1) {
    throw new TypeError(`${where}: holdBackChars must be a positive integer or Infinity`);
  }
  return value;
}

/** True for a genuine RegExp, from any realm. */
export function isRegExp(value: unknown): value is RegExp {
  return types.isRegExp(value);
}

/** A copy of `re` without the stateful `g` and `y` flags, so `test` never reads or writes `lastIndex`. */
export function statelessCopy(re: RegExp): RegExp {
  return new RegExp(re.source, re.flags.replace(/[gy]/g, ''));
}
