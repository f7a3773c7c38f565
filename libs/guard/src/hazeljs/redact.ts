// Which values a reviewer (and a caller, for a tool's output) must not see: HazelJS redacts
// well-known secret names and a tool's `redactFields`, by key name at any depth. Here the names are
// turned into concrete JSON pointers for the one redaction gatehouse has (`redactArguments`, and the
// approval gateway's salted commitments).
import { type JsonValue } from '@gatehouse/contracts';
import { redactArguments } from '../approvals/redaction.js';

/** Key names HazelJS always redacts (also matched lower-cased). */
export const SENSITIVE_KEYS: readonly string[] = Object.freeze(['password', 'secret', 'apiKey', 'api_key', 'token', 'accessToken', 'refreshToken', 'authorization', 'ssn', 'creditCard', 'credit_card']);

const escape = (token: string) => token.replace(/~/g, '~0').replace(/\//g, '~1');

/** The JSON pointers of every value under a key named in `names` (or its lower-case form), at any depth. */
export function keyPointers(value: JsonValue, names: readonly string[]): string[] {
  const wanted = new Set(names);
  const found: string[] = [];
  const walk = (node: JsonValue, at: string, depth: number): void => {
    if (node === null || typeof node !== 'object' || depth > 64) return;
    if (Array.isArray(node)) {
      node.forEach((item, i) => walk(item, `${at}/${i}`, depth + 1));
      return;
    }
    for (const key of Object.keys(node)) {
      const here = `${at}/${escape(key)}`;
      // `*` is the redaction paths' wildcard: a key of that name is redacted with its siblings, never skipped.
      if (wanted.has(key) || wanted.has(key.toLowerCase())) found.push(key === '*' ? `${at}/*` : here);
      else walk(node[key] as JsonValue, here, depth + 1);
    }
  };
  walk(value, '', 0);
  return found;
}

/** `value` with every value under the named keys replaced by the redaction marker (a copy). */
export function redactKeys(value: JsonValue, names: readonly string[]): JsonValue {
  return redactArguments(value, keyPointers(value, names)).value;
}
