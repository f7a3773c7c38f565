import { decodeEvent, GatehouseError, type TopicId, topicName } from '@gatehouse/contracts';
import { type KafkaMessage } from 'kafkajs';
import { type DecodedRecord, type PoisonRecord } from './records.js';
import { traceContextFromHeaders } from './telemetry/trace-context.js';

/** Decodes one kafkajs message into a typed record, or describes it as poison. */
export function decodeRecord<T extends TopicId>(
  topicId: T,
  partition: number,
  message: KafkaMessage,
  namespace?: string,
): { ok: true; record: DecodedRecord<T> } | { ok: false; poison: PoisonRecord } {
  const topic = topicName(topicId, namespace);
  const key = message.key ? message.key.toString('utf8') : null;
  try {
    const event = decodeEvent(topicId, message.value);
    const trace = traceContextFromHeaders(message.headers) ?? event.trace;
    return {
      ok: true,
      record: { topic, partition, offset: message.offset, logTime: new Date(Number(message.timestamp)), key, event, ...(trace === undefined ? {} : { trace }) },
    };
  } catch (error) {
    const code = error instanceof GatehouseError ? error.code : 'CONTRACT.DECODE_FAILED';
    const reason = error instanceof GatehouseError ? error.message : 'record could not be decoded';
    return { ok: false, poison: { topic, partition, offset: message.offset, key, value: message.value, code, reason } };
  }
}
