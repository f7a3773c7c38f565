import { type z } from 'zod';
import { authenticateAgent, type Caller, callerFor, type LedgerAgent } from '../auth/agent-auth.js';
import { parseRequest } from './parse-request.js';

/**
 * The edge of every agent route: authenticates the agent first (an anonymous or wrong key is 401
 * before the body is looked at), validates the body or query (400), then scopes the request to
 * the tenant it names among the agent's own (403 for any other).
 */
export function agentRequest<S extends z.ZodType<{ tenant?: string | undefined }>>(
  agents: readonly LedgerAgent[],
  authorization: string | undefined,
  schema: S,
  raw: unknown,
): { readonly caller: Caller; readonly request: z.infer<S> } {
  const agent = authenticateAgent(authorization, agents);
  const request = parseRequest(schema, raw);
  return { caller: callerFor(agent, request.tenant), request };
}
