import { z } from 'zod';
import { ChainLinkSchema } from './chain.js';
import { EventSignatureSchema } from './signing.js';

/** W3C trace context, carried so a decision can be joined to the agent's trace. */
export const TraceContextSchema = z.object({
  traceparent: z.string().regex(/^[\da-f]{2}-[\da-f]{32}-[\da-f]{16}-[\da-f]{2}$/, 'must be a W3C traceparent'),
  tracestate: z.string().max(512).optional(),
});
export type TraceContext = z.infer<typeof TraceContextSchema>;

const Identifier = z.string().min(1).max(256);

/**
 * The fields every event shares. Readers tolerate fields they do not know (adding a
 * field is backwards compatible); anything else is a new event version.
 */
export const EnvelopeFields = {
  /** Unique id of this event; consumers de-duplicate on it. */
  id: z.uuid(),
  /** Wire identity of the event, e.g. `ApprovalDecided`. */
  type: z.string().min(1),
  /** Schema version of `type`, starting at 1. */
  version: z.number().int().min(1),
  /** The producer: `guard:<instance>` or `service:<name>`. */
  source: Identifier,
  /** When the producer created the event (ISO 8601). Time rules use the log's append time instead. */
  time: z.iso.datetime({ offset: true }),
  tenant: Identifier,
  /** What the event is about: an approval id, a run id, a ledger key, a policy set id. */
  subject: Identifier,
  correlationId: Identifier.optional(),
  causationId: Identifier.optional(),
  trace: TraceContextSchema.optional(),
  /** Position in the producer's hash chain (audit events; see `chain.ts`). */
  chain: ChainLinkSchema.optional(),
  /** The owning service's Ed25519 signature: required on events that grant (see `signing.ts`). */
  signature: EventSignatureSchema.optional(),
} as const;

/** Builds the schema of one event: the envelope plus a literal type, version and payload. */
export function defineEvent<const T extends string, const V extends number, P extends z.ZodType>(
  type: T,
  version: V,
  payload: P,
) {
  return z.looseObject({
    ...EnvelopeFields,
    type: z.literal(type),
    version: z.literal(version),
    payload,
  });
}

export type EnvelopeMeta = {
  id: string;
  source: string;
  time: string;
  tenant: string;
  subject: string;
  correlationId?: string;
  causationId?: string;
  trace?: TraceContext;
  chain?: import('./chain.js').ChainLink;
};
