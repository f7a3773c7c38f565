import { describe, expect, it } from '@jest/globals';
import { type DecisionRecorded, eventDigest, GatehouseError, isDecisionRecorded, type TopicEvent, verifyAuditChain, verifyAuditSources } from '@gatehouse/contracts';
import { TEST_KEYS, testAgentKey, testKeyring } from '@gatehouse/contracts/testing';
import { type EventProducer } from '@gatehouse/kafka';
import { AuditLogger, type AuditInput } from './audit-logger.js';
import { type AuditEventPublisher, EVENTS_DROPPED, EVENTS_DROPPED_REASON, KAFKA_UNAVAILABLE, kafkaAuditPublisher, kafkaAuditSink, type KafkaAuditSinkOptions } from './kafka-sink.js';
import { REQUIRED_SINK_FAILED } from './sinks.js';
import { type AuditEvent } from './types.js';

const SECRET = 'broker kafka-internal.acme:9092 said: password=hunter2';

/** An in-memory publisher whose behaviour a test switches: succeed, fail, or hold until released. */
class FakePublisher implements AuditEventPublisher {
  readonly batches: DecisionRecorded[][] = [];
  calls = 0;
  behaviour: 'ok' | 'fail' | 'hold' = 'ok';
  private held: (() => void)[] = [];

  async publishMany(events: readonly DecisionRecorded[]): Promise<void> {
    this.calls += 1;
    if (this.behaviour === 'fail') throw new Error(SECRET);
    if (this.behaviour === 'hold') await new Promise<void>((resolve) => this.held.push(resolve));
    this.batches.push([...events]);
  }

  release(): void {
    const held = this.held;
    this.held = [];
    for (const resolve of held) resolve();
  }

  codes(): string[] {
    return this.batches.flat().map((e) => e.payload.code);
  }
}

let sequence = 0;
function auditEvent(overrides: Partial<AuditEvent> = {}): AuditEvent {
  sequence += 1;
  return {
    id: `00000000-0000-4000-8000-${String(sequence).padStart(12, '0')}`,
    timestamp: new Date().toISOString(),
    boundary: 'tool',
    action: 'tool.execute',
    resource: 'tool:refunds',
    decision: 'allowed',
    code: `TOOL.E${sequence}`,
    reason: 'manifest satisfied',
    context: { tenant: 'acme', runId: 'run-1' },
    ...overrides,
  };
}

function sinkWith(publisher: AuditEventPublisher, options: Partial<KafkaAuditSinkOptions> = {}) {
  return kafkaAuditSink({ publisher, mode: 'best-effort', source: 'guard:spec', defaultTenant: 'acme', ...options });
}

/** Polls until `probe` holds, failing at the deadline (no bare sleeps). */
async function until(probe: () => boolean, what: string, timeoutMs = 5_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!probe()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
}

async function rejectionOf(promise: unknown): Promise<GatehouseError> {
  try {
    await promise;
  } catch (error) {
    expect(error).toBeInstanceOf(GatehouseError);
    return error as GatehouseError;
  }
  throw new Error('expected a rejection');
}

describe('kafkaAuditSink batching', () => {
  it('sends a batch as soon as maxBatch events wait, without waiting for the linger', async () => {
    const publisher = new FakePublisher();
    const sink = sinkWith(publisher, { maxBatch: 10, lingerMs: 60_000 });
    for (let i = 0; i < 10; i += 1) await sink.write(auditEvent());
    expect(publisher.calls).toBe(1);
    await until(() => publisher.batches.length === 1, 'the full batch');
    expect(publisher.batches[0]).toHaveLength(10);
    await sink.close();
  });

  it('splits a burst into batches of at most maxBatch, in order', async () => {
    const publisher = new FakePublisher();
    const sink = sinkWith(publisher, { maxBatch: 10, lingerMs: 60_000 });
    const events = Array.from({ length: 25 }, () => auditEvent());
    for (const e of events) await sink.write(e);
    await sink.flush();
    expect(publisher.batches.map((b) => b.length)).toEqual([10, 10, 5]);
    expect(publisher.codes()).toEqual(events.map((e) => e.code));
    await sink.close();
  });

  it('sends a smaller batch once lingerMs passed', async () => {
    const publisher = new FakePublisher();
    const sink = sinkWith(publisher, { maxBatch: 100, lingerMs: 50 });
    const started = Date.now();
    for (let i = 0; i < 3; i += 1) await sink.write(auditEvent());
    expect(publisher.calls).toBe(0);
    await until(() => publisher.batches.length === 1, 'the lingered batch');
    expect(Date.now() - started).toBeGreaterThanOrEqual(45);
    expect(publisher.batches[0]).toHaveLength(3);
    await sink.close();
  });

  it('publishes contract events on the audit topic shape', async () => {
    const publisher = new FakePublisher();
    const sink = sinkWith(publisher, { lingerMs: 0 });
    const e = auditEvent({ context: { tenant: 'globex', runId: 'run-42' } });
    await sink.write(e);
    await sink.flush();
    expect(publisher.batches[0]?.[0]).toMatchObject({ id: e.id, type: 'DecisionRecorded', source: 'guard:spec', tenant: 'globex', subject: 'run-42', payload: { decisionId: e.id } });
    await sink.close();
  });

  it('fails only the write of an event the contract rejects, never the batch it would have joined', async () => {
    const publisher = new FakePublisher();
    const sink = sinkWith(publisher, { lingerMs: 0 });
    const good = auditEvent();
    expect(() => sink.write(auditEvent({ code: 'C'.repeat(200) }))).toThrow('"payload.code"');
    await sink.write(good);
    await sink.flush();
    expect(publisher.codes()).toEqual([good.code]);
    await sink.close();
  });
});

describe('kafkaAuditSink required mode', () => {
  it('is required and resolves a write only once its batch is acknowledged', async () => {
    const publisher = new FakePublisher();
    publisher.behaviour = 'hold';
    const sink = sinkWith(publisher, { mode: 'required', lingerMs: 0 });
    expect(sink.required).toBe(true);
    let acknowledged = false;
    const write = Promise.resolve(sink.write(auditEvent())).then(() => {
      acknowledged = true;
    });
    await until(() => publisher.calls === 1, 'the send');
    expect(acknowledged).toBe(false);
    expect(sink.buffered).toBe(1);
    publisher.release();
    await write;
    expect(acknowledged).toBe(true);
    expect(sink.buffered).toBe(0);
    await sink.close();
  });

  it('sends the first write at once by default, and groups the writes that arrive while it is in flight into the next request', async () => {
    const publisher = new FakePublisher();
    publisher.behaviour = 'hold';
    const sink = sinkWith(publisher, { mode: 'required' });
    const first = Promise.resolve(sink.write(auditEvent()));
    // No linger: the request is on its way within the write itself, before any timer could fire.
    expect(publisher.calls).toBe(1);
    const rest = Array.from({ length: 5 }, () => Promise.resolve(sink.write(auditEvent())));
    expect(publisher.calls).toBe(1);
    publisher.behaviour = 'ok';
    publisher.release();
    await Promise.all([first, ...rest]);
    expect(publisher.batches.map((b) => b.length)).toEqual([1, 5]);
    await sink.close();
  });

  it('rejects with a retryable AUDIT.KAFKA_UNAVAILABLE that carries no broker text when the send fails, and does not resend', async () => {
    const publisher = new FakePublisher();
    publisher.behaviour = 'fail';
    const sink = sinkWith(publisher, { mode: 'required', lingerMs: 0, retryBackoffMs: 1 });
    const error = await rejectionOf(sink.write(auditEvent()));
    expect(error.code).toBe(KAFKA_UNAVAILABLE);
    expect(error.retryable).toBe(true);
    expect(error.category).toBe('unavailable');
    expect(error.details).toMatchObject({ reason: 'send-failed' });
    expect(JSON.stringify(error.toJSON())).not.toContain('hunter2');
    expect(error.cause).toBeUndefined();
    publisher.behaviour = 'ok';
    await sink.flush();
    expect(publisher.calls).toBe(1);
    expect(publisher.batches).toEqual([]);
    await sink.close();
  });

  it('rejects once deliveryTimeoutMs passed without an acknowledgement', async () => {
    const publisher = new FakePublisher();
    publisher.behaviour = 'hold';
    const sink = sinkWith(publisher, { mode: 'required', lingerMs: 0, deliveryTimeoutMs: 50 });
    const started = Date.now();
    const error = await rejectionOf(sink.write(auditEvent()));
    expect(error.code).toBe(KAFKA_UNAVAILABLE);
    expect(error.details).toMatchObject({ reason: 'timeout', timeoutMs: 50 });
    expect(Date.now() - started).toBeGreaterThanOrEqual(45);
    publisher.release();
    await sink.close();
  });

  it('makes AuditLogger.record fail closed with AUDIT.REQUIRED_SINK_FAILED', async () => {
    const publisher = new FakePublisher();
    publisher.behaviour = 'fail';
    const errors: unknown[] = [];
    const logger = new AuditLogger({ sink: sinkWith(publisher, { mode: 'required', lingerMs: 0 }), onSinkError: (error) => void errors.push(error) });
    const input: AuditInput = { boundary: 'tool', action: 'tool.execute', resource: 'tool:refunds', decision: 'allowed', code: 'TOOL.ALLOWED', reason: 'ok', context: {} };
    const error = await rejectionOf(logger.record(input));
    expect(error.code).toBe(REQUIRED_SINK_FAILED);
    expect((errors[0] as GatehouseError).code).toBe(KAFKA_UNAVAILABLE);
    await logger.close();
  });
});

describe('kafkaAuditSink best-effort mode', () => {
  it('resolves writes at once, keeps failed batches and retries them with back-off until delivered', async () => {
    const publisher = new FakePublisher();
    publisher.behaviour = 'fail';
    const sink = sinkWith(publisher, { lingerMs: 0, retryBackoffMs: 5 });
    expect(sink.required).toBe(false);
    const events = [auditEvent(), auditEvent(), auditEvent()];
    for (const e of events) expect(sink.write(e)).toBeUndefined();
    await until(() => publisher.calls >= 3, 'three failed attempts');
    expect(sink.buffered).toBe(3);
    publisher.behaviour = 'ok';
    await until(() => sink.buffered === 0, 'the retry to succeed');
    expect(publisher.codes()).toEqual(events.map((e) => e.code));
    expect(sink.dropped).toBe(0);
    await sink.close();
  });

  it('drops and counts events beyond maxBuffered, then records the gap once Kafka is back', async () => {
    const publisher = new FakePublisher();
    publisher.behaviour = 'fail';
    const sink = sinkWith(publisher, { lingerMs: 0, maxBuffered: 5, retryBackoffMs: 20 });
    const kept = Array.from({ length: 5 }, () => auditEvent());
    for (const e of kept) sink.write(e);
    sink.write(auditEvent({ boundary: 'egress' }));
    sink.write(auditEvent());
    sink.write(auditEvent({ boundary: 'input' }));
    expect(sink.buffered).toBe(5);
    expect(sink.dropped).toBe(3);
    await until(() => publisher.calls === 1, 'a failed attempt');

    publisher.behaviour = 'ok';
    await sink.flush();
    expect(publisher.batches.map((b) => b.length)).toEqual([5, 1]);
    expect(publisher.codes().slice(0, 5)).toEqual(kept.map((e) => e.code));
    const report = publisher.batches[1]?.[0];
    expect(report?.payload).toMatchObject({
      boundary: 'egress',
      outcome: 'error',
      code: EVENTS_DROPPED,
      reason: EVENTS_DROPPED_REASON,
      attributes: { dropped: 3 },
    });
    expect(report?.tenant).toBe('acme');
    expect(sink.dropped).toBe(3);

    // The gap is reported once; later deliveries add no further report.
    sink.write(auditEvent());
    await sink.flush();
    expect(publisher.codes().filter((c) => c === EVENTS_DROPPED)).toHaveLength(1);
    await sink.close();
  });

  it('counts events in flight against the bound', async () => {
    const publisher = new FakePublisher();
    publisher.behaviour = 'hold';
    const sink = sinkWith(publisher, { lingerMs: 0, maxBuffered: 1 });
    sink.write(auditEvent());
    sink.write(auditEvent({ boundary: 'guardrail' }));
    publisher.behaviour = 'ok';
    publisher.release();
    await sink.flush();
    expect(publisher.batches[1]?.[0]?.payload).toMatchObject({ boundary: 'guardrail', code: EVENTS_DROPPED, attributes: { dropped: 1 } });
    await sink.close();
  });

  it('rejects flush when Kafka cannot take the events within deliveryTimeoutMs, and keeps them', async () => {
    const publisher = new FakePublisher();
    publisher.behaviour = 'fail';
    const sink = sinkWith(publisher, { lingerMs: 0, deliveryTimeoutMs: 60, retryBackoffMs: 5 });
    sink.write(auditEvent());
    const error = await rejectionOf(sink.flush());
    expect(error.code).toBe(KAFKA_UNAVAILABLE);
    expect(sink.buffered).toBe(1);
    publisher.behaviour = 'ok';
    await sink.flush();
    expect(sink.buffered).toBe(0);
    await sink.close();
  });
});

describe('kafkaAuditSink close', () => {
  it('delivers what is buffered, then refuses new writes', async () => {
    const publisher = new FakePublisher();
    const sink = sinkWith(publisher, { lingerMs: 60_000 });
    sink.write(auditEvent());
    sink.write(auditEvent());
    await sink.close();
    expect(publisher.batches.flat()).toHaveLength(2);
    expect(() => sink.write(auditEvent())).toThrow(expect.objectContaining({ code: 'AUDIT.SINK_CLOSED' }));
    await expect(sink.close()).resolves.toBeUndefined();
  });

  it('rejects when it cannot deliver in time and counts the undelivered events as dropped', async () => {
    const publisher = new FakePublisher();
    publisher.behaviour = 'fail';
    const sink = sinkWith(publisher, { lingerMs: 0, deliveryTimeoutMs: 50, retryBackoffMs: 5 });
    sink.write(auditEvent());
    sink.write(auditEvent());
    const error = await rejectionOf(sink.close());
    expect(error.code).toBe(KAFKA_UNAVAILABLE);
    expect(sink.buffered).toBe(0);
    expect(sink.dropped).toBe(2);
  });
});

describe('kafkaAuditSink options', () => {
  it('rejects unknown fields and invalid values with a TypeError', () => {
    const publisher = new FakePublisher();
    expect(() => sinkWith(publisher, { linger: 5 } as never)).toThrow('unknown kafkaAuditSink option "linger"');
    expect(() => sinkWith(publisher, { mode: 'sometimes' as never })).toThrow(TypeError);
    expect(() => sinkWith(publisher, { maxBatch: 0 })).toThrow(TypeError);
    expect(() => sinkWith(publisher, { lingerMs: -1 })).toThrow(TypeError);
    expect(() => sinkWith(publisher, { source: '' })).toThrow(TypeError);
    expect(() => sinkWith({} as never)).toThrow(TypeError);
  });
});

describe('kafkaAuditPublisher', () => {
  function fakeProducer() {
    const sent: unknown[][] = [];
    let closed = 0;
    const producer = {
      publishMany: async (topicId: string, events: readonly unknown[]) => {
        sent.push([topicId, events.length]);
        return [];
      },
      close: async () => {
        closed += 1;
      },
    };
    return { producer: producer as unknown as EventProducer, sent, closed: () => closed };
  }

  it('publishes to the audit topic through the given producer and leaves it open', async () => {
    const fake = fakeProducer();
    const publisher = kafkaAuditPublisher(fake.producer);
    await publisher.publishMany([]);
    await publisher.close();
    expect(fake.sent).toEqual([['audit', 0]]);
    expect(fake.closed()).toBe(0);
  });

  it('connects on first use, tries again after a failed connect, and closes the producer it connected', async () => {
    const fake = fakeProducer();
    let attempts = 0;
    const publisher = kafkaAuditPublisher(async () => {
      attempts += 1;
      if (attempts === 1) throw new Error('connect refused');
      return fake.producer;
    });
    expect(attempts).toBe(0);
    await expect(publisher.publishMany([])).rejects.toThrow('connect refused');
    await publisher.publishMany([]);
    await publisher.publishMany([]);
    expect(attempts).toBe(2);
    await publisher.close();
    expect(fake.closed()).toBe(1);
    await expect(publisher.publishMany([])).rejects.toMatchObject({ code: 'AUDIT.PUBLISHER_CLOSED' });
  });
});

describe('kafkaAuditSink checkpoints (an agent key vouches for its decisions)', () => {
  const agentKey = testAgentKey('agent:spec-bot', ['acme']);
  const keyring = testKeyring(agentKey);

  /** Everything the sink appended, decisions and checkpoints, in order. */
  class LogPublisher implements AuditEventPublisher {
    readonly events: TopicEvent<'audit'>[] = [];
    fail = false;
    async publishMany(events: readonly TopicEvent<'audit'>[]): Promise<void> {
      if (this.fail) throw new Error(SECRET);
      this.events.push(...events);
    }
    checkpoints() {
      return this.events.filter((e) => e.type === 'AuditChainCheckpoint');
    }
    verify() {
      return verifyAuditSources(this.events.map((event, i) => ({ event, position: `#${i}` })), keyring);
    }
  }

  it('signs a checkpoint every `checkpointEvery` delivered decisions, and one over the rest at close', async () => {
    const log = new LogPublisher();
    const sink = sinkWith(log, { agentKey, checkpointEvery: 3, checkpointIntervalMs: 60_000, maxBatch: 1 });
    for (let i = 0; i < 4; i += 1) sink.write(auditEvent());
    await until(() => log.checkpoints().length === 1, 'the first checkpoint');
    await sink.close();
    const checkpoints = log.checkpoints();
    expect(checkpoints.map((c) => c.type === 'AuditChainCheckpoint' && c.payload.digests.length)).toEqual([3, 1]);
    expect(checkpoints.every((c) => c.source === 'guard:spec' && c.signature?.keyId === agentKey.keyId)).toBe(true);
    expect(log.verify()).toMatchObject({ ok: true, records: 4, verified: 4, unverified: 0 });
    // The checkpoints name the sink's chain and its last link; the chain itself is intact.
    const chained = log.events.filter(isDecisionRecorded);
    expect(checkpoints.at(-1)).toMatchObject({ payload: { producer: chained[0]?.chain?.producer, lastSeq: 4 } });
    expect(verifyAuditChain(log.events.map((event, i) => ({ event, position: `#${i}` })))).toMatchObject({ ok: true, events: 4 });
  });

  it('checkpoints on flush and after the interval, never delaying a required write', async () => {
    const log = new LogPublisher();
    const sink = sinkWith(log, { mode: 'required', agentKey, checkpointIntervalMs: 20 });
    await sink.write(auditEvent());
    expect(log.checkpoints()).toHaveLength(0); // the write resolved on its own acknowledgement
    await until(() => log.checkpoints().length === 1, 'the checkpoint after the interval');
    await sink.write(auditEvent());
    await sink.flush();
    expect(log.checkpoints()).toHaveLength(2);
    await sink.close();
    expect(log.checkpoints()).toHaveLength(2); // nothing left to cover
    expect(log.verify()).toMatchObject({ verified: 2 });
  });

  it('vouches only for decisions the broker acknowledged', async () => {
    const log = new LogPublisher();
    const sink = sinkWith(log, { mode: 'required', agentKey, checkpointIntervalMs: 60_000 });
    await sink.write(auditEvent());
    log.fail = true;
    await expect(sink.write(auditEvent())).rejects.toMatchObject({ code: KAFKA_UNAVAILABLE });
    log.fail = false;
    await sink.close();
    const [checkpoint] = log.checkpoints();
    expect(checkpoint?.type === 'AuditChainCheckpoint' && checkpoint.payload.digests).toEqual([eventDigest(log.events[0])]);
  });

  it('writes no checkpoint without a key, and refuses a key its checkpoints could not claim for', async () => {
    const log = new LogPublisher();
    const plain = sinkWith(log);
    plain.write(auditEvent());
    await plain.close();
    expect(log.checkpoints()).toEqual([]);
    expect(log.verify()).toMatchObject({ verified: 0, unverified: 1 });
    expect(() => sinkWith(log, { agentKey, source: 'service:approval' })).toThrow('source must be guard:<name>');
    expect(() => sinkWith(log, { agentKey, defaultTenant: 'globex' })).toThrow('defaultTenant must be one of the agentKey tenants');
    expect(() => sinkWith(log, { checkpointEvery: 10 })).toThrow('checkpoint options need an agentKey');
    expect(() => sinkWith(log, { agentKey: TEST_KEYS.approval as never })).toThrow('agentKey must be an agent key');
    expect(() => sinkWith(log, { agentKey, checkpointEvery: 5_000 })).toThrow('checkpointEvery must be at most 1000');
  });
});
