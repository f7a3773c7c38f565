import { isJsonValue, type JsonValue } from '@gatehouse/contracts';

/**
 * True when `value` survives a JSON round trip unchanged (`isJsonValue` of @gatehouse/contracts,
 * at any depth), or is `undefined`: no Date, Map, class instance, non-finite number, sparse
 * array or nested undefined. A replayed result must have the type the first call returned.
 */
export function isJsonNative(value: unknown): value is JsonValue | undefined {
  return value === undefined || isJsonValue(value, Infinity);
}
