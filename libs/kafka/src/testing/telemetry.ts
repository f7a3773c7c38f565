import { AsyncLocalStorage } from 'node:async_hooks';
import { randomBytes } from 'node:crypto';
import {
  type Attributes,
  type AttributeValue,
  type Context,
  context,
  type ContextManager,
  createNoopMeter,
  type Link,
  type Meter,
  type MeterProvider,
  metrics,
  type ObservableCallback,
  type ObservableResult,
  ROOT_CONTEXT,
  type Span,
  type SpanContext,
  SpanKind,
  type SpanOptions,
  type SpanStatus,
  trace,
  TraceFlags,
  type Tracer,
  type TracerProvider,
} from '@opentelemetry/api';

/** A span as the recording tracer saw it. */
export interface RecordedSpan {
  name: string;
  readonly scope: string;
  readonly kind: SpanKind;
  readonly traceId: string;
  readonly spanId: string;
  readonly parentSpanId: string | undefined;
  readonly attributes: Record<string, AttributeValue>;
  readonly links: Link[];
  status: SpanStatus | undefined;
  ended: boolean;
}

/** One measurement: its value and attributes. */
export interface Measurement {
  readonly value: number;
  readonly attributes: Attributes;
}

/** What `recordTelemetry` registered, and what it recorded since. */
export interface RecordedTelemetry {
  readonly spans: RecordedSpan[];
  /** Every add or record of the counter or histogram `name`, in order. */
  measurements(name: string): Measurement[];
  /** The sum of the counter `name`'s adds whose attributes include `where`. */
  sum(name: string, where?: Attributes): number;
  /** What the observable gauge `name` observes now. */
  observe(name: string): Measurement[];
  /** Unregisters everything (the API's no-ops again). */
  stop(): void;
}

/** The API's context manager over AsyncLocalStorage (what the Node SDK registers), for tests that register no SDK. */
class StorageContextManager implements ContextManager {
  private readonly storage = new AsyncLocalStorage<Context>();
  active(): Context {
    return this.storage.getStore() ?? ROOT_CONTEXT;
  }
  with<A extends unknown[], F extends (...args: A) => ReturnType<F>>(ctx: Context, fn: F, thisArg?: ThisParameterType<F>, ...args: A): ReturnType<F> {
    return this.storage.run(ctx, () => fn.apply(thisArg, args));
  }
  bind<T>(ctx: Context, target: T): T {
    if (typeof target !== 'function') return target;
    const run = (...args: unknown[]) => this.with(ctx, () => (target as (...a: unknown[]) => unknown)(...args));
    return run as T;
  }
  enable(): this {
    return this;
  }
  disable(): this {
    this.storage.disable();
    return this;
  }
}

const hex = (bytes: number) => randomBytes(bytes).toString('hex');

function recordingSpan(recorded: RecordedSpan): Span {
  const spanContext: SpanContext = { traceId: recorded.traceId, spanId: recorded.spanId, traceFlags: TraceFlags.SAMPLED };
  const span: Span = {
    spanContext: () => spanContext,
    setAttribute: (key, value) => {
      if (value !== undefined) recorded.attributes[key] = value;
      return span;
    },
    setAttributes: (attributes) => {
      for (const [key, value] of Object.entries(attributes)) if (value !== undefined) recorded.attributes[key] = value;
      return span;
    },
    addEvent: () => span,
    addLink: (link) => {
      recorded.links.push(link);
      return span;
    },
    addLinks: (links) => {
      recorded.links.push(...links);
      return span;
    },
    setStatus: (status) => {
      recorded.status = status;
      return span;
    },
    updateName: (name) => {
      recorded.name = name;
      return span;
    },
    end: () => {
      recorded.ended = true;
    },
    isRecording: () => !recorded.ended,
    recordException: () => undefined,
  };
  return span;
}

function recordingTracer(scope: string, spans: RecordedSpan[]): Tracer {
  const startSpan = (name: string, options: SpanOptions = {}, ctx: Context = context.active()): Span => {
    const parent = options.root ? undefined : trace.getSpanContext(ctx);
    const recorded: RecordedSpan = {
      name,
      scope,
      kind: options.kind ?? SpanKind.INTERNAL,
      traceId: parent?.traceId ?? hex(16),
      spanId: hex(8),
      parentSpanId: parent?.spanId,
      attributes: {},
      links: [...(options.links ?? [])],
      status: undefined,
      ended: false,
    };
    for (const [key, value] of Object.entries(options.attributes ?? {})) if (value !== undefined) recorded.attributes[key] = value;
    spans.push(recorded);
    return recordingSpan(recorded);
  };
  const startActiveSpan = ((name: string, ...rest: unknown[]) => {
    const fn = rest.pop() as (span: Span) => unknown;
    const [options, ctx] = rest as [SpanOptions | undefined, Context | undefined];
    const span = startSpan(name, options, ctx);
    return context.with(trace.setSpan(ctx ?? context.active(), span), () => fn(span));
  }) as Tracer['startActiveSpan'];
  return { startSpan, startActiveSpan };
}

function recordingMeter(measured: Map<string, Measurement[]>, observers: { name: string; callback: ObservableCallback }[]): Meter {
  const push = (name: string) => (value: number, attributes: Attributes = {}) => {
    const list = measured.get(name) ?? [];
    list.push({ value, attributes });
    measured.set(name, list);
  };
  const observable = (name: string) => ({
    addCallback: (callback: ObservableCallback) => void observers.push({ name, callback }),
    removeCallback: (callback: ObservableCallback) => {
      const at = observers.findIndex((o) => o.callback === callback);
      if (at >= 0) observers.splice(at, 1);
    },
  });
  const noop = createNoopMeter();
  return {
    createCounter: (name) => ({ add: push(name) }),
    createUpDownCounter: (name) => ({ add: push(name) }),
    createHistogram: (name) => ({ record: push(name) }),
    createGauge: (name) => ({ record: push(name) }),
    createObservableGauge: observable,
    createObservableCounter: observable,
    createObservableUpDownCounter: observable,
    addBatchObservableCallback: (callback, observables) => noop.addBatchObservableCallback(callback, observables),
    removeBatchObservableCallback: (callback, observables) => noop.removeBatchObservableCallback(callback, observables),
  };
}

/**
 * Registers a recording TracerProvider, MeterProvider and an AsyncLocalStorage context manager as
 * the API's globals (in place of any registered before) — the SDK is not a dependency of the
 * libraries, so their tests observe the API through this — and returns what they record.
 */
export function recordTelemetry(): RecordedTelemetry {
  const spans: RecordedSpan[] = [];
  const measured = new Map<string, Measurement[]>();
  const observers: { name: string; callback: ObservableCallback }[] = [];
  const tracerProvider: TracerProvider = { getTracer: (name) => recordingTracer(name, spans) };
  const meterProvider: MeterProvider = { getMeter: () => recordingMeter(measured, observers) };
  trace.disable();
  metrics.disable();
  context.disable();
  context.setGlobalContextManager(new StorageContextManager());
  trace.setGlobalTracerProvider(tracerProvider);
  metrics.setGlobalMeterProvider(meterProvider);
  const matches = (attributes: Attributes, where: Attributes) => Object.entries(where).every(([key, value]) => attributes[key] === value);
  return {
    spans,
    measurements: (name) => [...(measured.get(name) ?? [])],
    sum: (name, where = {}) => (measured.get(name) ?? []).filter((m) => matches(m.attributes, where)).reduce((n, m) => n + m.value, 0),
    observe: (name) => {
      const seen: Measurement[] = [];
      const result: ObservableResult = { observe: (value, attributes = {}) => void seen.push({ value, attributes }) };
      for (const o of observers.filter((x) => x.name === name)) void o.callback(result);
      return seen;
    },
    stop: () => {
      trace.disable();
      metrics.disable();
      context.disable();
    },
  };
}
