import { type JsonValue } from '@gatehouse/contracts';
import { EgressDeniedError, type EgressGuardedFetch, type EgressRequestInit, withRedirectCheck } from './egress-fetch.js';
import { normalizeHost } from './hosts.js';

/** What an egress hook sees of an outbound request: never headers, and the body only when it is JSON. */
export interface EgressRequestView {
  readonly method: string;
  readonly host: string;
  readonly path: string;
  readonly body?: JsonValue;
}

/** Decides one outbound request; anything but `{ allowed: true }` refuses it. */
export type EgressHook = (request: EgressRequestView) => Promise<{ readonly allowed: true } | { readonly allowed: false; readonly code: string }>;

// Keyed by the per-call RequestContext: the hook is set by host code (the guarded agent), never by a tool.
const hooks = new WeakMap<object, EgressHook>();

/** Registers the egress hook of one call's context (the guarded agent does this for `egress` guardrails). */
export function setEgressHook(requestContext: object, hook: EgressHook): void {
  hooks.set(requestContext, hook);
}

export function egressHookOf(requestContext: unknown): EgressHook | undefined {
  return requestContext !== null && typeof requestContext === 'object' ? hooks.get(requestContext) : undefined;
}

function jsonBody(init: EgressRequestInit | undefined): JsonValue | undefined {
  const body = init?.body;
  if (typeof body !== 'string') return undefined;
  const type = new Headers(init?.headers).get('content-type') ?? '';
  if (!/^application\/([a-z.+-]*\+)?json\b/i.test(type)) return undefined;
  try {
    return JSON.parse(body) as JsonValue;
  } catch {
    return undefined;
  }
}

/**
 * The connector's guarded fetch with a hook in front: the hook sees method, host and path (and a JSON
 * body) of the request and may refuse it before anything is sent, and again for every redirect
 * hop before it is followed (the body only while the hop still sends it: same method). A hook
 * that fails refuses too.
 */
export function hookedEgressFetch(fetch: EgressGuardedFetch, hook: EgressHook, connectorId: string): EgressGuardedFetch {
  return async (input, init) => {
    let url: URL;
    try {
      url = new URL(String(input));
    } catch {
      throw new EgressDeniedError('CONNECTOR.EGRESS_INVALID_URL', connectorId, {});
    }
    const host = normalizeHost(url.hostname);
    const body = jsonBody(init);
    const view: EgressRequestView = { method: (init?.method ?? 'GET').toUpperCase(), host, path: url.pathname, ...(body === undefined ? {} : { body }) };
    let answer: Awaited<ReturnType<EgressHook>> | undefined;
    try {
      answer = await hook(view);
    } catch {
      answer = undefined;
    }
    if (answer?.allowed !== true) throw new EgressDeniedError('CONNECTOR.EGRESS_GUARDRAIL_DENIED', connectorId, { host, ...(answer && !answer.allowed ? { guardrailCode: answer.code } : {}) });
    return fetch(
      input,
      withRedirectCheck(init, async (hop) => {
        const resent = hop.method === view.method && body !== undefined && view.method !== 'GET' && view.method !== 'HEAD';
        return (await hook({ method: hop.method, host: hop.host, path: hop.path, ...(resent ? { body } : {}) })).allowed === true;
      }),
    );
  };
}
