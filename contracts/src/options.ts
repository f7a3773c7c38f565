// The one options parser every factory uses. Every failure is a TypeError naming the option
// and what was expected; messages never include the offending value, because option values
// (patterns, allowlists, keys) are often secrets themselves.
import { types } from 'node:util';

/** A snapshot of an options bag whose own keys were all recognised. */
export type OptionBag = Readonly<Record<string, unknown>>;

/** Copies `value` (undefined or a plain object) after checking every own key is in `known`. */
export function readOptions(where: string, value: unknown, known: readonly string[]): OptionBag {
  if (value === undefined) return {};
  if (value === null || typeof value !== 'object' || Array.isArray(value)) {
    throw new TypeError(`${where}: options must be an object, got ${describeType(value)}`);
  }
  const bag: Record<string, unknown> = {};
  for (const key of Object.keys(value)) {
    if (!known.includes(key)) {
      throw new TypeError(`${where}: unknown option ${describeKey(key)} (known options: ${known.join(', ')})`);
    }
    // Read once: a getter must not be able to answer differently to validation and use.
    bag[key] = (value as Record<string, unknown>)[key];
  }
  return bag;
}

/** The type of a value for an error message: never the value itself. */
export function describeType(value: unknown): string {
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'an array';
  if (types.isRegExp(value)) return 'a RegExp';
  return typeof value;
}

// An option key is echoed only when it looks like an option name, so a bag keyed by
// something secret-shaped does not leak it into a log line.
function describeKey(key: string): string {
  return /^[A-Za-z_$][A-Za-z_$]{0,39}$/.test(key) ? `"${key}"` : '(name not shown)';
}
