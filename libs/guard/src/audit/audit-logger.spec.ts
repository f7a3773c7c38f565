import { describe, expect, it, jest } from '@jest/globals';
import { GatehouseError } from '@gatehouse/contracts';
import { AuditLogger, type AuditInput } from './audit-logger.js';
import { combineAuditSinks, REQUIRED_SINK_FAILED } from './sinks.js';
import { type AuditEvent, type AuditSink } from './types.js';

const SECRET = 'sk-live-0123456789 from the prompt';

function input(overrides: Partial<AuditInput> = {}): AuditInput {
  return {
    boundary: 'tool',
    action: 'tool.execute',
    resource: 'tool:refunds',
    decision: 'allowed',
    code: 'TOOL.ALLOWED',
    reason: 'manifest satisfied',
    context: { tenant: 'acme', runId: 'run-1' },
    ...overrides,
  };
}

async function rejectionOf(promise: Promise<unknown>): Promise<GatehouseError> {
  try {
    await promise;
  } catch (error) {
    expect(error).toBeInstanceOf(GatehouseError);
    return error as GatehouseError;
  }
  throw new Error('expected a rejection');
}

function expectNoUnderlyingText(error: GatehouseError): void {
  expect(error.message).not.toContain(SECRET);
  expect(JSON.stringify(error.toJSON())).not.toContain(SECRET);
  expect(error.cause).toBeUndefined();
}

describe('AuditLogger ring buffer', () => {
  it('keeps at most maxBuffered events, evicting the oldest first and counting evictions', async () => {
    const logger = new AuditLogger({ maxBuffered: 3 });
    for (const code of ['A', 'B', 'C', 'D', 'E']) await logger.record(input({ code }));
    expect(logger.events().map((e) => e.code)).toEqual(['C', 'D', 'E']);
    expect(logger.evicted).toBe(2);
  });

  it('keeps 1,000 events by default', async () => {
    const logger = new AuditLogger();
    for (let i = 0; i < 1_005; i += 1) await logger.record(input({ code: `C${i}` }));
    const events = logger.events();
    expect(events).toHaveLength(1_000);
    expect(events[0]?.code).toBe('C5');
    expect(events[999]?.code).toBe('C1004');
    expect(logger.evicted).toBe(5);
  });

  it('returns a copy of the buffer, oldest first', async () => {
    const logger = new AuditLogger({ maxBuffered: 2 });
    await logger.record(input({ code: 'A' }));
    const snapshot = logger.events();
    await logger.record(input({ code: 'B' }));
    expect(snapshot.map((e) => e.code)).toEqual(['A']);
    expect(logger.events().map((e) => e.code)).toEqual(['A', 'B']);
  });
});

describe('AuditLogger events', () => {
  it('assigns a uuid and an ISO timestamp and freezes the event deeply', async () => {
    const logger = new AuditLogger();
    const event = await logger.record(
      input({
        actor: { id: 'u-1', role: 'support', kind: 'human' },
        policy: { name: 'pii', phase: 'output', channel: 'answer' },
        detections: ['email'],
        detail: { chunks: 3 },
      }),
    );
    expect(event.id).toMatch(/^[\da-f]{8}-[\da-f]{4}-4[\da-f]{3}-[89ab][\da-f]{3}-[\da-f]{12}$/);
    expect(new Date(event.timestamp).toISOString()).toBe(event.timestamp);
    for (const part of [event, event.context, event.actor, event.policy, event.detections, event.detail]) expect(Object.isFrozen(part)).toBe(true);
    expect(() => {
      (event.context as { tenant?: string }).tenant = 'other';
    }).toThrow(TypeError);
  });

  it('copies the input, so a later change by the caller does not alter the record', async () => {
    const logger = new AuditLogger();
    const context = { tenant: 'acme', runId: 'run-1' };
    const detections = ['email'];
    const event = await logger.record(input({ context, detections }));
    context.tenant = 'mallory';
    detections.push('later');
    expect(event.context.tenant).toBe('acme');
    expect(event.detections).toEqual(['email']);
    expect(Object.isFrozen(context)).toBe(false);
  });

  it('keeps only the known fields, so content attached by mistake stays off the record', async () => {
    const logger = new AuditLogger();
    const sloppy = { ...input(), prompt: SECRET, context: { tenant: 'acme', message: SECRET } } as unknown as AuditInput;
    const event = await logger.record(sloppy);
    expect(JSON.stringify(event)).not.toContain(SECRET);
    expect(event.context).toEqual({ tenant: 'acme' });
  });

  it('rejects a malformed event with a TypeError that names the field, not the value, and records nothing', async () => {
    const logger = new AuditLogger();
    await expect(logger.record(input({ decision: 'maybe' as never }))).rejects.toThrow(TypeError);
    await expect(logger.record(input({ detail: { text: { nested: SECRET } } as never }))).rejects.toThrow('detail.text');
    await expect(logger.record(input({ code: '' }))).rejects.toThrow('"code"');
    await expect(logger.record(input({ boundary: SECRET as never }))).rejects.not.toThrow(SECRET);
    expect(logger.events()).toEqual([]);
  });
});

describe('AuditLogger options', () => {
  it('rejects unknown option fields and invalid values with a TypeError', () => {
    expect(() => new AuditLogger({ maxbuffered: 10 } as never)).toThrow(TypeError);
    expect(() => new AuditLogger({ maxBuffered: 0 })).toThrow(TypeError);
    expect(() => new AuditLogger({ maxBuffered: 1.5 })).toThrow(TypeError);
    expect(() => new AuditLogger({ sink: 'kafka' as never })).toThrow(TypeError);
    expect(() => new AuditLogger({ sink: { required: true } as never })).toThrow(TypeError);
    expect(() => new AuditLogger({ onSinkError: true as never })).toThrow(TypeError);
  });
});

describe('AuditLogger sink failure isolation', () => {
  it('reports a best-effort sink that throws synchronously and resolves the record', async () => {
    const failures: [unknown, AuditEvent][] = [];
    const logger = new AuditLogger({
      sink: () => {
        throw new Error('sync boom');
      },
      onSinkError: (error, event) => void failures.push([error, event]),
    });
    const event = await logger.record(input());
    expect(failures).toHaveLength(1);
    expect((failures[0]?.[0] as Error).message).toBe('sync boom');
    expect(failures[0]?.[1]).toBe(event);
    expect(logger.sinkFailures).toBe(1);
    expect(logger.events()).toEqual([event]);
  });

  it('reports a best-effort sink whose promise rejects and resolves the record', async () => {
    const onSinkError = jest.fn();
    const logger = new AuditLogger({ sink: async () => Promise.reject(new Error('async boom')), onSinkError });
    await expect(logger.record(input())).resolves.toMatchObject({ code: 'TOOL.ALLOWED' });
    expect(onSinkError).toHaveBeenCalledTimes(1);
  });

  it('swallows an onSinkError that itself throws or rejects', async () => {
    const throwing = new AuditLogger({
      sink: () => {
        throw new Error('boom');
      },
      onSinkError: () => {
        throw new Error('handler boom');
      },
    });
    await expect(throwing.record(input())).resolves.toBeDefined();
    const rejecting = new AuditLogger({
      sink: () => {
        throw new Error('boom');
      },
      onSinkError: (async () => {
        throw new Error('async handler boom');
      }) as never,
    });
    await expect(rejecting.record(input())).resolves.toBeDefined();
  });

  it('writes to a sink object and awaits its write', async () => {
    const written: string[] = [];
    const sink: AuditSink = {
      write: async (event) => {
        await Promise.resolve();
        written.push(event.code);
      },
    };
    const logger = new AuditLogger({ sink });
    await logger.record(input({ code: 'A' }));
    expect(written).toEqual(['A']);
  });
});

describe('AuditLogger required sinks', () => {
  it('fails closed with a typed error that carries no text of the underlying error', async () => {
    const onSinkError = jest.fn();
    const logger = new AuditLogger({
      sink: {
        required: true,
        write: async () => {
          throw new Error(SECRET);
        },
      },
      onSinkError,
    });
    const error = await rejectionOf(logger.record(input()));
    expect(error.code).toBe(REQUIRED_SINK_FAILED);
    expect(error.category).toBe('unavailable');
    expect(error.retryable).toBe(true);
    expectNoUnderlyingText(error);
    // The host still learns the real cause, privately.
    expect((onSinkError.mock.calls[0]?.[0] as Error).message).toBe(SECRET);
    expect(logger.required).toBe(true);
  });

  it('fails closed when a required sink throws synchronously', async () => {
    const logger = new AuditLogger({
      sink: {
        required: true,
        write: () => {
          throw new Error(SECRET);
        },
      },
    });
    const error = await rejectionOf(logger.record(input()));
    expect(error.code).toBe(REQUIRED_SINK_FAILED);
    expectNoUnderlyingText(error);
  });

  it('continues when only best-effort parts of a required combined sink fail', async () => {
    const onSinkError = jest.fn();
    const required: AuditSink = { required: true, write: jest.fn<AuditSink['write']>() };
    const logger = new AuditLogger({
      sink: combineAuditSinks(required, () => {
        throw new Error('metrics down');
      }),
      onSinkError,
    });
    await expect(logger.record(input())).resolves.toBeDefined();
    expect(onSinkError).toHaveBeenCalledTimes(1);
    expect((onSinkError.mock.calls[0]?.[0] as GatehouseError).code).toBe('AUDIT.SINKS_FAILED');
  });

  it('fails closed when the required part of a combined sink fails', async () => {
    const logger = new AuditLogger({
      sink: combineAuditSinks(() => undefined, {
        required: true,
        write: async () => {
          throw new Error(SECRET);
        },
      }),
    });
    const error = await rejectionOf(logger.record(input()));
    expect(error.code).toBe(REQUIRED_SINK_FAILED);
    expectNoUnderlyingText(error);
  });
});

describe('AuditLogger flush and close', () => {
  it('delegates flush and close to the sink when it has them', async () => {
    const flush = jest.fn(async () => undefined);
    const close = jest.fn(async () => undefined);
    const logger = new AuditLogger({ sink: { write: () => undefined, flush, close } });
    await logger.flush();
    await logger.close();
    expect(flush).toHaveBeenCalledTimes(1);
    expect(close).toHaveBeenCalledTimes(1);
  });

  it('flushes and closes without a sink, or with a sink that has neither', async () => {
    await expect(new AuditLogger().flush()).resolves.toBeUndefined();
    await expect(new AuditLogger({ sink: () => undefined }).close()).resolves.toBeUndefined();
  });
});
