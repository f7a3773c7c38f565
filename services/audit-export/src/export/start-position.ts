import { GatehouseError } from '@gatehouse/contracts';
import { offsetsAtTime } from '@gatehouse/kafka';
import { type Admin } from 'kafkajs';
import { z } from 'zod';

/** Where an export (re)starts: the log's ends, a broker time, or explicit next offsets. */
export type StartPosition =
  | { readonly kind: 'earliest' }
  | { readonly kind: 'latest' }
  | { readonly kind: 'time'; readonly at: Date }
  | { readonly kind: 'offsets'; readonly offsets: Readonly<Record<number, string>> };

const OffsetsSchema = z.record(z.string().regex(/^\d{1,5}$/, 'partition numbers'), z.string().regex(/^\d{1,19}$/, 'must be a decimal offset'));

/** `earliest`, `latest`, an ISO time, or `{ "0": "12", "1": "40" }`; undefined when invalid. */
export function parseStartPosition(raw: unknown): StartPosition | undefined {
  if (raw === 'earliest' || raw === 'latest') return { kind: raw };
  if (typeof raw === 'string') {
    if (!z.iso.datetime({ offset: true }).safeParse(raw).success) return undefined;
    return { kind: 'time', at: new Date(raw) };
  }
  const offsets = OffsetsSchema.safeParse(raw);
  if (offsets.success && Object.keys(offsets.data).length > 0) return { kind: 'offsets', offsets: offsets.data };
  return undefined;
}

/** Per partition, the next offset to read for `position` on `topic`. */
export async function resolveStartPosition(admin: Admin, topic: string, position: StartPosition): Promise<Record<number, string>> {
  try {
    switch (position.kind) {
      case 'earliest':
        return Object.fromEntries((await admin.fetchTopicOffsets(topic)).map((o) => [o.partition, o.low]));
      case 'latest':
        return Object.fromEntries((await admin.fetchTopicOffsets(topic)).map((o) => [o.partition, o.high]));
      case 'time':
        // The first record appended at or after the time; none yet: the end.
        return await offsetsAtTime(admin, topic, position.at);
      case 'offsets':
        return { ...position.offsets };
      default: {
        const exhaustive: never = position;
        return exhaustive;
      }
    }
  } catch (cause) {
    throw new GatehouseError('AUDIT.POSITION_UNAVAILABLE', 'the audit topic offsets could not be read', { category: 'unavailable', retryable: true, cause });
  }
}
