import { type Attributes, context, type Link, SpanStatusCode, trace } from '@opentelemetry/api';
import { type TraceContext } from '@gatehouse/contracts';
import { parentContext } from '@gatehouse/kafka';

/**
 * Runs `work` in a span `name` of the trace `parent` names (an approval's request, say), linked to
 * the span active now (the HTTP request that asked for it): what `work` appends carries that trace
 * on (`activeTraceContext()`). Without `parent`, the span is a child of the active one. The span
 * ends when `work` settles, with an error status when it throws; `attributes` must be names, ids
 * and codes, never content.
 */
export async function continueTrace<R>(scope: string, name: string, parent: TraceContext | undefined, attributes: Attributes, work: () => Promise<R>): Promise<R> {
  const active = context.active();
  const caller = trace.getSpanContext(active);
  const links: Link[] = parent !== undefined && caller !== undefined ? [{ context: caller }] : [];
  const from = parent === undefined ? active : parentContext(parent);
  const span = trace.getTracer(scope).startSpan(name, { attributes, links }, from);
  try {
    return await context.with(trace.setSpan(from, span), work);
  } catch (error) {
    span.setStatus({ code: SpanStatusCode.ERROR });
    throw error;
  } finally {
    span.end();
  }
}
