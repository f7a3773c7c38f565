import { checkGrant, decodeEvent, type Keyring, type TopicId } from '@gatehouse/contracts';
import fc from 'fast-check';
import { CANARY, deepNesting, jsonText, junkJson, junkString, malformedJsonText, nonObjectJson, prototypeKeys, RawJson, wrongType } from './http-inputs.js';

// Records a consumer must survive, and what each one is by the contract the consumers share
// (`decodeEvent` of @gatehouse/contracts): `poison` fails it (every consumer counts and skips
// it), `forged` passes it but grants without a trusted signature (every fold ignores and counts
// it). Each category is filtered through that same codec, so the expected counts are exact.

/** One record as produced. `kind` names the category for reports; it never holds the value. */
export interface KafkaInput {
  readonly key: string | null;
  readonly value: Buffer | null;
  readonly headers?: Record<string, string | Buffer | (string | Buffer)[]>;
  readonly kind: string;
  readonly expect: 'poison' | 'forged' | 'ignored';
}

type Json = Record<string, unknown>;

/** What the contract makes of `value` on `topicId`: poison (decodeRecord would refuse it), or the event. */
export function classify(topicId: TopicId, value: Buffer | null): { poison: true } | { poison: false; event: Json } {
  try {
    return { poison: false, event: decodeEvent(topicId, value) as Json };
  } catch {
    // decodeRecord turns every failure into poison, a stack overflow in a validator included.
    return { poison: true };
  }
}

const clone = (event: Json): Json => structuredClone(event);

function withKeys(event: Json, extra: Json): Json {
  const out = clone(event);
  for (const key of Object.keys(extra)) Object.defineProperty(out, key, { value: extra[key], enumerable: true, configurable: true, writable: true });
  return out;
}

/** An envelope whose type or version no topic carries: wrong types, other versions, junk names (NUL and huge ones too). */
function brokenEnvelope(base: Json): fc.Arbitrary<Json> {
  const type = String(base['type']);
  return fc.oneof(
    fc.constantFrom<unknown>(undefined, 1, '', null, [type], { type }, type.toLowerCase(), `${type}V2`, `${type}\u0000`, `\u0000${type}`, `${type}${CANARY}`).map((t) => {
      const out = clone(base);
      if (t === undefined) delete out['type'];
      else out['type'] = t;
      return out;
    }),
    fc.integer({ min: 300, max: 5_000 }).map((n) => ({ ...clone(base), type: `${type}${'\u0000'.repeat(2)}${'T'.repeat(n)}` })),
    fc.constantFrom<unknown>(undefined, '1', 0, 2, -1, 1.5, null, 1e300, [1], true).map((v) => {
      const out = clone(base);
      if (v === undefined) delete out['version'];
      else out['version'] = v;
      return out;
    }),
  );
}

/** The event with one envelope or payload field removed or given a value of a wrong type. */
function brokenField(base: Json): fc.Arbitrary<Json> {
  const payload = (base['payload'] ?? {}) as Json;
  const targets = [...['id', 'time', 'tenant', 'subject', 'source', 'payload'].map((f) => ({ at: 'envelope', field: f })), ...Object.keys(payload).map((f) => ({ at: 'payload', field: f }))];
  return fc.record({ target: fc.constantFrom(...targets), drop: fc.boolean(), junk: fc.oneof(wrongType('none'), junkString({ maxLength: 2_000 }), fc.constant('')) }).map(({ target, drop, junk }) => {
    const out = clone(base);
    const holder = target.at === 'envelope' ? out : ((out['payload'] as Json | undefined) ?? out);
    if (drop) delete holder[target.field];
    else holder[target.field] = junk;
    return out;
  });
}

/** Payload keys carrying NUL characters and prototype names inside the event, plus a definite break. */
function hostileKeys(base: Json): fc.Arbitrary<Json> {
  return fc.record({ proto: prototypeKeys(), nulKey: fc.constantFrom('a\u0000b', '\u0000', 'key\u0000__proto__'), version: fc.constantFrom(0, -1, '1') }).map(({ proto, nulKey, version }) => {
    const out = withKeys(base, proto);
    const payload = withKeys((out['payload'] as Json | undefined) ?? {}, { [nulKey]: CANARY });
    return { ...withKeys(out, { payload }), version };
  });
}

/** The event with a payload field replaced by nesting deep enough to overflow recursive validators (and a definite break). */
function deepEvent(base: Json): fc.Arbitrary<Json> {
  const fields = Object.keys((base['payload'] ?? {}) as Json);
  return fc.record({ deep: deepNesting(), field: fc.constantFrom(...(fields.length > 0 ? fields : ['x'])) }).map(({ deep, field }) => {
    const out = clone(base);
    (out['payload'] as Json)[field] = deep;
    // An unknown version, so the record is poison whatever depth the reader's stack tolerates.
    out['version'] = 99;
    return out;
  });
}

/** Values past any sane size (a few hundred kB), below the broker's 1 MB record limit. */
function hugeValue(base: Json): fc.Arbitrary<Buffer> {
  return fc.record({ size: fc.integer({ min: 100_000, max: 700_000 }), shape: fc.constantFrom('string', 'event-field', 'array') }).map(({ size, shape }) => {
    if (shape === 'string') return Buffer.from(JSON.stringify(`${CANARY}${'s'.repeat(size)}`));
    if (shape === 'array') return Buffer.from(`[${'0,'.repeat(size / 2)}0]`);
    const payload = { ...((base['payload'] ?? {}) as Json), reason: 'r'.repeat(size / 2), code: 'c'.repeat(size / 2) };
    return Buffer.from(JSON.stringify({ ...clone(base), payload, version: 7 }));
  });
}

/** Kafka headers: absent, junk text, binary, repeated keys, names other consumers read. */
export function junkRecordHeaders(): fc.Arbitrary<KafkaInput['headers']> {
  const value = fc.oneof(junkString({ maxLength: 200 }), fc.uint8Array({ maxLength: 64 }).map((b) => Buffer.from(b)), fc.array(junkString({ maxLength: 20 }), { minLength: 2, maxLength: 3 }));
  return fc.option(fc.dictionary(fc.oneof(fc.constantFrom('traceparent', 'content-type', 'kafka_correlationId', 'gatehouse-signature', '__proto__'), fc.string({ maxLength: 20 })), value, { maxKeys: 4 }), {
    freq: 2,
    nil: undefined,
  });
}

export interface PoisonOptions {
  readonly topicId: TopicId;
  /** Valid events of the topic, to break. */
  readonly bases: readonly Json[];
  /** Valid events of other topics (valid JSON of the wrong shape here). */
  readonly foreign: readonly Json[];
  /** Granting events without a trusted signature (for topics that carry grants). */
  readonly forged?: fc.Arbitrary<Json>;
  /** Decodable events every fold must reject without changing state (an id squatting on another scope, say). */
  readonly ignored?: fc.Arbitrary<Json>;
  /** The keyring the consumers trust: a forged event must be untrusted by it. */
  readonly keyring: Keyring;
  /** Compacted topics refuse records without a key. */
  readonly keyRequired: boolean;
}

/** Records of every hostile shape for one topic, each tagged with what the consumers must make of it. */
export function poisonRecords(options: PoisonOptions): fc.Arbitrary<KafkaInput> {
  const { topicId, bases, foreign, keyring } = options;
  const base = fc.constantFrom(...bases);
  const buffer = (value: Json | string | RawJson) => Buffer.from(typeof value === 'string' ? value : jsonText(value));
  const poison = (kind: string, values: fc.Arbitrary<Buffer | null>) => values.filter((v) => classify(topicId, v).poison).map((value) => ({ value, kind, expect: 'poison' as const }));
  const decodable = (kind: string, expect: 'forged' | 'ignored', events: fc.Arbitrary<Json>) =>
    events
      .map((e) => buffer(e))
      .filter((v) => {
        const decoded = classify(topicId, v);
        if (decoded.poison) return false;
        const trusted = checkGrant(decoded.event as { type: string; signature?: unknown }, keyring).trusted;
        return expect === 'forged' ? !trusted : trusted;
      })
      .map((value) => ({ value: value as Buffer | null, kind, expect }));
  const categories: fc.WeightedArbitrary<{ value: Buffer | null; kind: string; expect: KafkaInput['expect'] }>[] = [
    { weight: 40, arbitrary: poison('bytes', fc.uint8Array({ minLength: 1, maxLength: 600 }).map((b) => Buffer.from(b))) },
    { weight: 10, arbitrary: poison('empty', fc.constantFrom(null, Buffer.alloc(0))) },
    { weight: 30, arbitrary: poison('malformed-json', malformedJsonText().map(buffer)) },
    { weight: 30, arbitrary: poison('json-not-an-object', nonObjectJson().map((v) => buffer(typeof v === 'string' ? JSON.stringify(v) : jsonText(v)))) },
    { weight: 30, arbitrary: poison('json-wrong-shape', fc.dictionary(fc.string({ maxLength: 10 }), junkJson(), { maxKeys: 5 }).map(buffer)) },
    { weight: 50, arbitrary: poison('envelope-type-or-version', base.chain(brokenEnvelope).map(buffer)) },
    { weight: 60, arbitrary: poison('field-broken', base.chain(brokenField).map(buffer)) },
    { weight: 20, arbitrary: poison('other-topic-event', fc.constantFrom(...foreign).map(buffer)) },
    { weight: 20, arbitrary: poison('hostile-keys', base.chain(hostileKeys).map(buffer)) },
    { weight: 10, arbitrary: poison('deep-nesting', base.chain(deepEvent).map(buffer)) },
    { weight: 3, arbitrary: poison('huge', base.chain(hugeValue)) },
  ];
  if (options.forged) categories.push({ weight: 20, arbitrary: decodable('forged-grant', 'forged', options.forged) });
  if (options.ignored) categories.push({ weight: 10, arbitrary: decodable('rejected-by-fold', 'ignored', options.ignored) });
  const key = options.keyRequired ? junkString({ maxLength: 100 }) : fc.option(fc.oneof(junkString({ maxLength: 100 }), fc.constant('')), { nil: null });
  return fc.record({ record: fc.oneof(...categories), key, headers: junkRecordHeaders() }).map(({ record, key, headers }) => ({ ...record, key, ...(headers !== undefined && { headers }) }));
}
