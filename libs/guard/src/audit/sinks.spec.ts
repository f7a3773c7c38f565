import { describe, expect, it, jest } from '@jest/globals';
import { GatehouseError } from '@gatehouse/contracts';
import { AUDIT_DECISION_METRIC, AUDIT_DURATION_METRIC, type AuditSinkFunction, combineAuditSinks, metricsAuditSink, REQUIRED_SINK_FAILED, SINKS_FAILED } from './sinks.js';
import { type AuditEvent, type AuditSink, type MetricsRecorder } from './types.js';

function event(overrides: Partial<AuditEvent> = {}): AuditEvent {
  return {
    id: '0b7e5a43-2b1c-4d6e-9f00-2d4c1c9d6a11',
    timestamp: '2026-11-02T10:00:00.000Z',
    boundary: 'output',
    action: 'agent.output.policy',
    resource: 'agent:support-bot',
    decision: 'denied',
    code: 'POLICY.DENIED',
    reason: 'policy denied the output',
    context: { tenant: 'acme' },
    ...overrides,
  };
}

async function failureOf(promise: void | Promise<void>): Promise<GatehouseError> {
  try {
    await promise;
  } catch (error) {
    return error as GatehouseError;
  }
  throw new Error('expected a failure');
}

function recorder() {
  return {
    increment: jest.fn<MetricsRecorder['increment']>(),
    observe: jest.fn<MetricsRecorder['observe']>(),
  };
}

describe('combineAuditSinks', () => {
  it('runs every sink even when the first fails, then reports how many failed', async () => {
    const reached: string[] = [];
    const combined = combineAuditSinks(
      () => {
        throw new Error('first down');
      },
      (e) => void reached.push(`second:${e.code}`),
      async () => Promise.reject(new Error('third down')),
      { write: (e) => void reached.push(`fourth:${e.code}`) },
    );
    const error = await failureOf(combined.write(event()));
    expect(reached).toEqual(['second:POLICY.DENIED', 'fourth:POLICY.DENIED']);
    expect(error.code).toBe(SINKS_FAILED);
    expect(error.details).toEqual({ failed: 2 });
    expect(error.message).not.toContain('down');
    expect((error.cause as AggregateError).errors.map((e: Error) => e.message)).toEqual(['first down', 'third down']);
  });

  it('resolves when every sink succeeds', async () => {
    const a = jest.fn<AuditSinkFunction>();
    const b = jest.fn<AuditSinkFunction>(async () => undefined);
    await combineAuditSinks(a, b).write(event());
    expect(a).toHaveBeenCalledTimes(1);
    expect(b).toHaveBeenCalledTimes(1);
  });

  it('is required when any part is, and best-effort otherwise', () => {
    expect(combineAuditSinks(() => undefined, { required: true, write: () => undefined }).required).toBe(true);
    expect(combineAuditSinks(() => undefined, { write: () => undefined }).required).toBe(false);
  });

  it('throws AUDIT.REQUIRED_SINK_FAILED when a required part fails, after running the others', async () => {
    const other = jest.fn<AuditSinkFunction>();
    const combined = combineAuditSinks(
      {
        required: true,
        write: () => {
          throw new Error('kafka down');
        },
      },
      other,
    );
    const error = await failureOf(combined.write(event()));
    expect(other).toHaveBeenCalledTimes(1);
    expect(error.code).toBe(REQUIRED_SINK_FAILED);
    expect(error.category).toBe('unavailable');
    expect(error.retryable).toBe(true);
    expect(error.details).toEqual({ failed: 1, requiredFailed: 1 });
  });

  it('treats a nested combination whose best-effort parts failed as a best-effort failure', async () => {
    const inner = combineAuditSinks({ required: true, write: () => undefined }, () => {
      throw new Error('metrics down');
    });
    const outer = combineAuditSinks(inner, () => undefined);
    expect(outer.required).toBe(true);
    expect((await failureOf(outer.write(event()))).code).toBe(SINKS_FAILED);
  });

  it('fans flush and close out to every part that has them, even when one fails', async () => {
    const calls: string[] = [];
    const part = (name: string, fails: boolean): AuditSink => ({
      write: () => undefined,
      flush: async () => {
        calls.push(`${name}.flush`);
        if (fails) throw new Error('flush failed');
      },
      close: async () => void calls.push(`${name}.close`),
    });
    const combined = combineAuditSinks(part('a', true), () => undefined, part('b', false));
    expect((await failureOf(combined.flush?.())).code).toBe(SINKS_FAILED);
    await combined.close?.();
    expect(calls).toEqual(['a.flush', 'b.flush', 'a.close', 'b.close']);
  });

  it('refuses to combine nothing or something that is not a sink', () => {
    expect(() => combineAuditSinks()).toThrow(TypeError);
    expect(() => combineAuditSinks(() => undefined, 42 as never)).toThrow('sinks[1]');
  });
});

describe('metricsAuditSink', () => {
  it('counts each decision labelled with boundary, decision and code', async () => {
    const metrics = recorder();
    await metricsAuditSink(metrics).write(event());
    expect(metrics.increment).toHaveBeenCalledWith(AUDIT_DECISION_METRIC, { boundary: 'output', decision: 'denied', code: 'POLICY.DENIED' });
    expect(metrics.increment.mock.calls[0]?.[0]).toBe('gatehouse.audit.decision');
    expect(metrics.observe).not.toHaveBeenCalled();
  });

  it('observes detail.durationSeconds when it is a finite, non-negative number', async () => {
    const metrics = recorder();
    const sink = metricsAuditSink(metrics);
    await sink.write(event({ detail: { durationSeconds: 0.25 } }));
    await sink.write(event({ detail: { durationSeconds: 0 } }));
    expect(metrics.observe.mock.calls).toEqual([
      [AUDIT_DURATION_METRIC, 0.25, { boundary: 'output', decision: 'denied', code: 'POLICY.DENIED' }],
      ['gatehouse.audit.duration_seconds', 0, { boundary: 'output', decision: 'denied', code: 'POLICY.DENIED' }],
    ]);
  });

  it('ignores a duration that is negative, not finite or not a number', async () => {
    const metrics = recorder();
    const sink = metricsAuditSink(metrics);
    for (const durationSeconds of [-1, Number.POSITIVE_INFINITY, Number.NaN, '0.5', true]) await sink.write(event({ detail: { durationSeconds } }));
    expect(metrics.observe).not.toHaveBeenCalled();
    expect(metrics.increment).toHaveBeenCalledTimes(5);
  });

  it('is best-effort and refuses a recorder without increment and observe', () => {
    expect(metricsAuditSink(recorder()).required).toBe(false);
    expect(() => metricsAuditSink({ increment: () => undefined } as never)).toThrow(TypeError);
    expect(() => metricsAuditSink(undefined as never)).toThrow(TypeError);
  });
});
