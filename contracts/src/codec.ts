import { randomUUID } from 'node:crypto';
import { type z } from 'zod';
import { type EnvelopeMeta } from './envelope.js';
import { ContractError } from './errors.js';
import { type TopicEvent, type TopicId, TOPICS, type TopicSpec } from './topics.js';

type AnyEventSchema = TopicSpec['events'][number];

/** The wire identity (`type`, `version`) an event schema declares. */
export function eventIdentity(schema: AnyEventSchema): { type: string; version: number } {
  const shape = (schema as unknown as z.ZodObject).shape as Record<string, z.ZodType>;
  return { type: (shape['type'] as z.ZodLiteral<string>).value, version: (shape['version'] as z.ZodLiteral<number>).value };
}

function findSchema(topic: TopicSpec, type: string, version: number): AnyEventSchema | undefined {
  return topic.events.find((schema) => {
    const identity = eventIdentity(schema);
    return identity.type === type && identity.version === version;
  });
}

function issueToError(topic: string, type: string, error: z.ZodError): ContractError {
  const issue = error.issues[0];
  const field = issue && issue.path.length > 0 ? issue.path.map(String).join('.') : '(root)';
  // The zod message names the expectation ("expected string"), not the offending value.
  return new ContractError('CONTRACT.INVALID_EVENT', `${type} on ${topic}: field "${field}" is invalid: ${issue?.message ?? 'invalid'}`, {
    topic,
    type,
    field,
    issues: error.issues.map((i) => ({ field: i.path.map(String).join('.') || '(root)', problem: i.message })),
  });
}

/**
 * Parses and validates a record value read from `topicId`. Throws a `ContractError`
 * naming the field for malformed JSON, an unknown type/version or an invalid field.
 */
export function decodeEvent<T extends TopicId>(topicId: T, value: Buffer | string | null | undefined): TopicEvent<T> {
  const topic: TopicSpec = TOPICS[topicId];
  if (value === null || value === undefined || value.length === 0) {
    throw new ContractError('CONTRACT.EMPTY_RECORD', `record on ${topic.name} has no value`, { topic: topic.name });
  }
  let raw: unknown;
  try {
    raw = JSON.parse(typeof value === 'string' ? value : value.toString('utf8'));
  } catch {
    throw new ContractError('CONTRACT.MALFORMED_JSON', `record on ${topic.name} is not valid JSON`, { topic: topic.name });
  }
  return validateEvent(topicId, raw);
}

/** Validates an already-parsed value against the events `topicId` may carry. */
export function validateEvent<T extends TopicId>(topicId: T, raw: unknown): TopicEvent<T> {
  const topic: TopicSpec = TOPICS[topicId];
  if (typeof raw !== 'object' || raw === null || Array.isArray(raw)) {
    throw new ContractError('CONTRACT.INVALID_ENVELOPE', `record on ${topic.name} is not an object`, { topic: topic.name, field: '(root)' });
  }
  const { type, version } = raw as { type?: unknown; version?: unknown };
  if (typeof type !== 'string' || type.length === 0) {
    throw new ContractError('CONTRACT.INVALID_ENVELOPE', `record on ${topic.name}: field "type" is missing or not a string`, { topic: topic.name, field: 'type' });
  }
  if (typeof version !== 'number' || !Number.isInteger(version)) {
    throw new ContractError('CONTRACT.INVALID_ENVELOPE', `record on ${topic.name}: field "version" is missing or not an integer`, { topic: topic.name, field: 'version' });
  }
  const schema = findSchema(topic, type, version);
  if (!schema) {
    throw new ContractError('CONTRACT.UNKNOWN_EVENT_TYPE', `${topic.name} does not carry ${type} v${version}`, {
      topic: topic.name,
      field: 'type',
      type,
      version,
    });
  }
  const parsed = schema.safeParse(raw);
  if (!parsed.success) throw issueToError(topic.name, type, parsed.error);
  return parsed.data as TopicEvent<T>;
}

/** Validates an event before it is written; the log never receives an invalid record. */
export function encodeEvent<T extends TopicId>(topicId: T, event: TopicEvent<T>): Buffer {
  const valid = validateEvent(topicId, event);
  return Buffer.from(JSON.stringify(valid), 'utf8');
}

type EventOf<S extends z.ZodType> = z.input<S>;

/**
 * Creates an event of `schema`: fills id, type, version and time (unless given) and
 * validates the result. Throws `ContractError` naming the first invalid field.
 */
export function createEvent<S extends AnyEventSchema>(
  schema: S,
  meta: Omit<EnvelopeMeta, 'id' | 'time'> & Partial<Pick<EnvelopeMeta, 'id' | 'time'>>,
  payload: EventOf<S> extends { payload: infer P } ? P : never,
): z.infer<S> {
  const { type, version } = eventIdentity(schema);
  const candidate = { id: randomUUID(), time: new Date().toISOString(), ...meta, type, version, payload };
  const parsed = schema.safeParse(candidate);
  if (!parsed.success) throw issueToError('(new event)', type, parsed.error);
  return parsed.data as z.infer<S>;
}
