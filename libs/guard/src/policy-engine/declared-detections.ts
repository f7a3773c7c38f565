// Detection names are a channel from code that reads content to every record of it (audit trail,
// export, SIEM). A name chosen at run time can spell what was read, and no test of the name's shape
// tells `leaky.4242` from `deny-pattern:2`; so only the names a policy or guardrail declared before
// it saw anything pass, and the rest collapse into one marker (one: their count is a channel too).
import { UNDECLARED_DETECTION } from './types.js';

/** The declaration of a policy or guardrail that declares nothing: every name it reports is undeclared. */
export const NOTHING_DECLARED: ReadonlySet<string> = Object.freeze(new Set<string>());

/**
 * Reads a `detections` declaration: absent is the empty set (every reported name is undeclared),
 * anything else must be an array of names matching `shape`. Throws a TypeError naming `where`.
 */
export function readDeclaredDetections(value: unknown, where: string, shape: RegExp): ReadonlySet<string> {
  if (value === undefined) return NOTHING_DECLARED;
  if (!Array.isArray(value)) throw new TypeError(`${where}: detections must be an array of names`);
  const names = new Set<string>();
  for (const name of value as unknown[]) {
    if (typeof name !== 'string' || !shape.test(name)) throw new TypeError(`${where}: detections must be detection names (${String(shape)})`);
    names.add(name);
  }
  return names;
}

/**
 * The names of `reported` that are in `declared`, in order and once each, at most `max`, followed
 * by `UNDECLARED_DETECTION` when anything else was reported (whatever it was, however many).
 */
export function screenDetections(reported: readonly unknown[], declared: ReadonlySet<string>, max: number): readonly string[] {
  const kept = new Set<string>();
  let undeclared = false;
  for (const name of reported) {
    if (typeof name === 'string' && declared.has(name)) {
      if (kept.size < max) kept.add(name);
    } else {
      undeclared = true;
    }
  }
  if (undeclared) kept.add(UNDECLARED_DETECTION);
  return Object.freeze([...kept]);
}
