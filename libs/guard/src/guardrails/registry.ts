import { GatehouseError } from '@gatehouse/contracts';
import { createModerationGuardrail, type ModerationGuardrailOptions } from './moderation-guardrail.js';
import { createPiiGuardrail, type PiiGuardrailOptions } from './pii-guardrail.js';
import { createSchemaGuardrail, type SchemaGuardrailOptions } from './schema-guardrail.js';
import { type Guardrail, GUARDRAIL_PLACEMENTS } from './types.js';

/** Builds a guardrail from options (which may be absent: the factory then decides what that means). */
export type GuardrailFactory = (options?: unknown) => Guardrail;

const factories = new Map<string, GuardrailFactory>();

/**
 * Adds a named factory (the shipped adapters register theirs below). A name is
 * registered once: a second registration throws, so a lookup cannot be swapped under a running agent.
 */
export function registerGuardrail(name: string, factory: GuardrailFactory): void {
  if (typeof name !== 'string' || !/^[a-z][a-z0-9-]{0,63}$/.test(name)) throw new TypeError('registerGuardrail: name must be lowercase letters, digits and -');
  if (typeof factory !== 'function') throw new TypeError('registerGuardrail: factory must be a function');
  if (factories.has(name)) throw new GatehouseError('GUARDRAIL.ALREADY_REGISTERED', `guardrail "${name}" is already registered`, { category: 'validation', details: { name } });
  factories.set(name, factory);
}

/** Names with a registered factory. */
export function registeredGuardrails(): readonly string[] {
  return Object.freeze([...factories.keys()].sort());
}

/**
 * A guardrail by name (`schema`, `pii`, `moderation`, and any registered). Throws `GUARDRAIL.UNKNOWN`
 * for a name nobody registered. `moderation` without a classifier returns a guardrail whose every check is deny/partial: a lookup that found no classifier
 * must never read as a clean bill of health.
 */
export function guardrailByName(name: string, options?: unknown): Guardrail {
  const factory = factories.get(name);
  if (!factory) throw new GatehouseError('GUARDRAIL.UNKNOWN', 'no guardrail is registered under that name', { category: 'validation', details: { name: String(name).slice(0, 64) } });
  return factory(options);
}

registerGuardrail('schema', (options) => createSchemaGuardrail((options ?? {}) as SchemaGuardrailOptions));
registerGuardrail('pii', (options) => createPiiGuardrail((options ?? {}) as PiiGuardrailOptions));
registerGuardrail('moderation', (options) => {
  const classify = (options as Partial<ModerationGuardrailOptions> | undefined)?.classify;
  if (typeof classify === 'function') return createModerationGuardrail(options as ModerationGuardrailOptions);
  return Object.freeze({
    name: 'moderation',
    placements: GUARDRAIL_PLACEMENTS,
    detections: Object.freeze(['moderation.no-classifier']),
    check: () => ({ action: 'deny' as const, outcome: 'partial' as const, detections: ['moderation.no-classifier'], reason: 'moderation.no-classifier' }),
  });
});
