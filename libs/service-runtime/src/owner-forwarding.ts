import { GatehouseError } from '@gatehouse/contracts';
import { activeTraceContext, traceHeaders } from '@gatehouse/kafka';
import { type PartitionOwner } from './projection/partition-owners.js';

/** Set on a request one replica forwards to another: the replica that forwarded it. */
export const FORWARDED_BY_HEADER = 'x-gatehouse-forwarded-by';

/** The request headers a forward carries: the caller's own credentials and correlation, nothing else. */
const FORWARDED_HEADERS = ['authorization', 'content-type', 'accept', 'traceparent', 'tracestate'] as const;

/** What forwarding reads of an incoming request (express's). */
export interface ForwardedRequest {
  readonly method: string;
  readonly originalUrl: string;
  readonly headers: Readonly<Record<string, string | string[] | undefined>>;
  readonly body?: unknown;
}

/** What forwarding writes of the answer. */
export interface ForwardedResponse {
  headersSent?: boolean;
  status(code: number): ForwardedResponse;
  setHeader(name: string, value: string): void;
  send(body: string): void;
}

/** Where a partition's owner answers. */
export interface OwnerLookup {
  ownerOf(partition: number): Promise<PartitionOwner | undefined>;
}

/** The refusal when no replica can answer for the partition now (it is moving, or its owner is unreachable). */
export function partitionMoving(partition: number): GatehouseError {
  return new GatehouseError('FOLD.PARTITION_MOVING', 'the replica that owns the partition of this key cannot be reached now; retry', {
    category: 'unavailable',
    retryable: true,
    details: { partition },
  });
}

/**
 * Relays a request whose key is on a partition another replica owns (the engine answered
 * FOLD.NOT_OWNER before deciding anything) to that owner, and its answer back, as is. The forward
 * carries the caller's own credentials (the owner authenticates and authorizes the caller again:
 * forwarding grants nothing) and never goes further: a forwarded request that reaches a replica
 * that does not own the partition either is refused with FOLD.PARTITION_MOVING (retryable), as is
 * one whose owner does not answer.
 */
export class OwnerForwarder {
  constructor(
    private readonly owners: OwnerLookup,
    private readonly self: { readonly replicaId: string; readonly url: string },
    /** How long the owner may take to answer, ms. */
    private readonly timeoutMs: number,
  ) {}

  /** Forwards `request` to the owner of `partition` and writes its answer; throws FOLD.PARTITION_MOVING when it cannot. */
  async forward(request: ForwardedRequest, response: ForwardedResponse, partition: number): Promise<void> {
    if (request.headers[FORWARDED_BY_HEADER] !== undefined) throw partitionMoving(partition);
    const owner = await this.owners.ownerOf(partition);
    if (!owner?.url || owner.url === this.self.url) throw partitionMoving(partition);
    const headers: Record<string, string> = { [FORWARDED_BY_HEADER]: this.self.replicaId };
    for (const name of FORWARDED_HEADERS) {
      const value = request.headers[name];
      if (typeof value === 'string') headers[name] = value;
    }
    // With tracing on, the owner's span continues this replica's server span rather than the caller's.
    const active = activeTraceContext();
    if (active) {
      delete headers['tracestate'];
      Object.assign(headers, traceHeaders(active));
    }
    const hasBody = request.method !== 'GET' && request.method !== 'HEAD' && request.body !== undefined;
    let answer: Response;
    try {
      answer = await fetch(`${owner.url}${request.originalUrl}`, {
        method: request.method,
        headers,
        ...(hasBody && { body: JSON.stringify(request.body) }),
        signal: AbortSignal.timeout(this.timeoutMs),
        redirect: 'manual',
      });
    } catch {
      throw partitionMoving(partition);
    }
    const text = await answer.text().catch(() => {
      throw partitionMoving(partition);
    });
    if (response.headersSent) return;
    for (const name of ['content-type', 'retry-after', 'www-authenticate']) {
      const value = answer.headers.get(name);
      if (value !== null) response.setHeader(name, value);
    }
    response.status(answer.status).send(text);
  }
}
