/**
 * A positive integer from the variable `name` (benchmark and load-test knobs), `fallback` when it
 * is unset or empty; anything else is refused with an error naming the variable.
 */
export function positiveIntegerEnv(name: string, fallback: number, env: NodeJS.ProcessEnv = process.env): number {
  const raw = env[name];
  if (raw === undefined || raw === '') return fallback;
  const value = Number(raw);
  if (!Number.isSafeInteger(value) || value < 1) throw new Error(`${name} must be a positive integer`);
  return value;
}
