/**
 * The inbox's calls to this service. The reviewer's key leaves the page only as a bearer header
 * to this origin (never in a URL); every answer is data from the network, checked before use.
 */

/** An approval's status, as the REST API names it. */
export type Status = 'pending' | 'approved' | 'approved-with-edits' | 'denied' | 'expired' | 'cancelled';

/** Each status in words. */
export const STATUS_WORDS: Readonly<Record<Status, string>> = {
  pending: 'Pending',
  approved: 'Approved',
  'approved-with-edits': 'Approved with edits',
  denied: 'Denied',
  expired: 'Expired',
  cancelled: 'Withdrawn by the requester',
};

/** Whether a string (from the network) is a status. */
export const isStatus = (value: unknown): value is Status => typeof value === 'string' && Object.hasOwn(STATUS_WORDS, value);

/** A status (from the network) in words. */
export const statusWords = (status: string): string => (isStatus(status) ? STATUS_WORDS[status] : status);

/** A requester, reviewer or principal. */
export interface Actor {
  readonly id: string;
  readonly role: string;
  readonly kind: string;
}

/**
 * The fields of the API's `ApprovalView` (`src/http/approval-view.ts`) that the page reads. The
 * server's type cannot be imported: the browser build has no Node types.
 */
export interface Approval {
  readonly approvalId: string;
  readonly status: Status;
  readonly tenant: string;
  readonly connectorId: string;
  readonly requester: Actor;
  readonly reason: string;
  readonly arguments: unknown;
  readonly redactedPaths: readonly string[];
  readonly toolDescription?: string;
  readonly dryRunPreview?: unknown;
  readonly requestedAt: string;
  readonly deadline: string;
  readonly settledAt?: string;
  readonly settledBy?: Actor;
  readonly comment?: string;
  readonly editedArguments?: unknown;
  readonly quorum?: { readonly required: number; readonly reviewers: readonly string[] };
  readonly votes: readonly { readonly reviewer: Actor }[];
}

/** A page of `GET /v1/approvals`. */
export interface Page {
  readonly items: readonly Approval[];
  readonly nextCursor?: string;
}

/** One answer: `status` 0 when the service did not answer. */
export interface Answer {
  readonly status: number;
  readonly body: unknown;
}

/** One `approval` event of `GET /v1/approval-events`. */
export interface Change {
  readonly approvalId: string;
  readonly status: string;
  readonly tenant: string;
  readonly connectorId: string;
}

/** The list filters; an empty string filters nothing. */
export interface Filters {
  readonly tenant: string;
  readonly connector: string;
}

/** The verdict a reviewer sends, with the edits when there are some. */
export type DecisionRequest = { readonly verdict: 'approve' | 'deny' } | { readonly verdict: 'approve-with-edits'; readonly editedArguments: unknown };

const isObject = (value: unknown): value is Record<string, unknown> => typeof value === 'object' && value !== null && !Array.isArray(value);
const isString = (value: unknown): value is string => typeof value === 'string';

/** Whether a value is an actor. */
export function isActor(value: unknown): value is Actor {
  return isObject(value) && isString(value['id']) && isString(value['role']) && isString(value['kind']);
}

/** Whether a value has the shape the page relies on (what it only renders as text is not checked further). */
export function isApproval(value: unknown): value is Approval {
  return (
    isObject(value) &&
    ['approvalId', 'status', 'tenant', 'connectorId', 'reason', 'requestedAt', 'deadline'].every((name) => isString(value[name])) &&
    isActor(value['requester']) &&
    'arguments' in value &&
    Array.isArray(value['redactedPaths']) &&
    Array.isArray(value['votes']) &&
    (value['settledBy'] === undefined || isActor(value['settledBy']))
  );
}

/** Whether a body is a page of approvals. */
export function isPage(body: unknown): body is Page {
  if (!isObject(body) || !Array.isArray(body['items'])) return false;
  return body['items'].every(isApproval) && (body['nextCursor'] === undefined || isString(body['nextCursor']));
}

/** Whether an event's data is an approval change. */
export function isChange(data: unknown): data is Change {
  return isObject(data) && ['approvalId', 'status', 'tenant', 'connectorId'].every((name) => isString(data[name]));
}

/** Whether an approval (or change) passes the filters. */
export function matches(filters: Filters, item: { readonly tenant: string; readonly connectorId: string }): boolean {
  return (!filters.tenant || item.tenant === filters.tenant) && (!filters.connector || item.connectorId === filters.connector);
}

/** The field of an answer's body, when the body is an object. */
export function field(answer: Answer, name: string): unknown {
  return isObject(answer.body) ? answer.body[name] : undefined;
}

/** An answer in words for the reviewer: the service's message, status and code (never a value sent). */
export function describe(answer: Answer): string {
  const message = field(answer, 'message');
  const code = field(answer, 'code');
  const text = isString(message) ? message : 'unexpected answer';
  return answer.status === 0 ? text : `${text} (${answer.status}${isString(code) ? ` ${code}` : ''})`;
}

/** `GET /v1/approvals` for one list: the pending requests (newest first) or the history (newest decision first). */
export function listPath(list: 'pending' | 'history', filters: Filters, limit: number, cursor: string | null): string {
  const query = new URLSearchParams(list === 'pending' ? { status: 'pending' } : { status: 'decided', order: 'settled' });
  query.set('limit', String(limit));
  if (filters.tenant) query.set('tenant', filters.tenant);
  if (filters.connector) query.set('connector', filters.connector);
  if (cursor) query.set('cursor', cursor);
  return `/v1/approvals?${query.toString()}`;
}

/** The path of one approval. */
export const approvalPath = (id: string): string => `/v1/approvals/${encodeURIComponent(id)}`;

/** Calls this service with one reviewer's key. */
export class Api {
  constructor(private readonly key: string) {}

  /** One call, answered as { status, body }. */
  async call(method: 'GET' | 'POST', path: string, body?: unknown): Promise<Answer> {
    const headers: Record<string, string> = { authorization: `Bearer ${this.key}`, accept: 'application/json' };
    const init: RequestInit = { method, headers, cache: 'no-store', credentials: 'omit' };
    if (body !== undefined) {
      headers['content-type'] = 'application/json';
      init.body = JSON.stringify(body);
    }
    let response: Response;
    try {
      response = await fetch(path, init);
    } catch {
      return { status: 0, body: { code: 'NETWORK', message: 'the approval service did not answer' } };
    }
    let parsed: unknown = null;
    try {
      parsed = await response.json();
    } catch {
      parsed = null;
    }
    return { status: response.status, body: parsed };
  }

  /** Opens the event stream (`fetch`, since an `EventSource` cannot send the header). */
  events(signal: AbortSignal): Promise<Response> {
    return fetch('/v1/approval-events', {
      headers: { authorization: `Bearer ${this.key}`, accept: 'text/event-stream' },
      cache: 'no-store',
      credentials: 'omit',
      signal,
    });
  }
}

/** What the parts of a signed-in page share; `current()` turns false at sign-out, and every async step checks it. */
export interface Context {
  readonly api: Api;
  current(): boolean;
  /** Signs out on a 401 (the key was revoked or rotated); true when the answer was one. */
  refused(answer: Answer): boolean;
  notice(message: string): void;
  filters(): Filters;
}
