import { type EntityManager } from 'typeorm';
import { z } from 'zod';
import { schemaIdent } from '@gatehouse/service-runtime';
import { type Reviewer } from '../auth/reviewer-auth.js';
import { ApprovalError } from '../errors.js';
import { type ApprovalRow, type ApprovalView, VIEW_COLUMNS, viewOf } from '../http/approval-view.js';

const STATUSES = ['pending', 'approved', 'approved-with-edits', 'denied', 'expired', 'cancelled'] as const;
/** What `status=decided` stands for: the approvals a reviewer settled (not an expiry or a withdrawal). */
const DECIDED = ['approved', 'approved-with-edits', 'denied'] as const;

const MAX_AGE_SECONDS = 100 * 365 * 24 * 60 * 60;
/** A text filter; PostgreSQL text cannot hold NUL, so a filter with one is refused rather than failing the query. */
const Filter = z
  .string()
  .min(1)
  .max(256)
  .refine((s) => !s.includes('\u0000'), 'must not contain NUL characters');

/** The query of `GET /v1/approvals`. */
export const ListQuery = z.strictObject({
  /** One status or a comma-separated list; `decided` stands for the three verdicts. Default: every status. */
  status: z
    .string()
    .transform((s) => s.split(','))
    .pipe(z.array(z.enum([...STATUSES, 'decided'])).min(1))
    .transform((list) => [...new Set(list.flatMap((s) => (s === 'decided' ? DECIDED : [s])))])
    .optional(),
  tenant: Filter.optional(),
  connector: Filter.optional(),
  requester: Filter.optional(),
  /** Only approvals requested at least / at most this many seconds ago (at most a century: the bound must stay a date). */
  minAgeSeconds: z.coerce.number().int().min(0).max(MAX_AGE_SECONDS).optional(),
  maxAgeSeconds: z.coerce.number().int().min(0).max(MAX_AGE_SECONDS).optional(),
  limit: z.coerce.number().int().min(1).max(200).default(50),
  /** `requested`: newest request first (default). `settled`: only settled approvals, newest settlement first (the history). */
  order: z.enum(['requested', 'settled']).default('requested'),
  /** `nextCursor` of the previous page (of the same order). */
  cursor: z.string().max(512).optional(),
});
export type ListQuery = z.infer<typeof ListQuery>;

export interface ApprovalPage {
  readonly items: readonly ApprovalView[];
  /** Present when more items follow: pass it as `cursor`. */
  readonly nextCursor?: string;
}

type Order = ListQuery['order'];

/** The column each order sorts by (a fixed name, never taken from the query). */
const ORDER_COLUMN: Readonly<Record<Order, 'requested_at' | 'settled_at'>> = { requested: 'requested_at', settled: 'settled_at' };

/** A position in one order; `by` is absent for `requested`, so cursors issued before `order` existed stay valid. */
const CursorSchema = z.strictObject({
  at: z.iso.datetime(),
  id: z.string().regex(/^appr_[0-9a-f]{64}$/),
  by: z.literal('settled').optional(),
});
type Cursor = z.infer<typeof CursorSchema>;

function invalidCursor(problem: string): ApprovalError {
  const details = { fields: [{ field: 'cursor', problem }] };
  return new ApprovalError('APPROVAL.INVALID_REQUEST', details, undefined, 'invalid field(s): "cursor"');
}

function decodeCursor(cursor: string, order: Order): Cursor {
  let decoded: Cursor;
  try {
    decoded = CursorSchema.parse(JSON.parse(Buffer.from(cursor, 'base64url').toString('utf8')));
  } catch {
    throw invalidCursor('not a cursor this API issued');
  }
  // A position in one order means nothing in the other: it would skip or repeat items.
  if ((decoded.by ?? 'requested') !== order) throw invalidCursor('a cursor of another order');
  return decoded;
}

const encodeCursor = (cursor: Cursor) => Buffer.from(JSON.stringify(cursor), 'utf8').toString('base64url');

/** The reviewer's scope and the query's filters, as SQL conditions joined with AND. */
function conditions(reviewer: Reviewer, query: ListQuery, now: number, param: (value: unknown) => string): string[] {
  const where: string[] = [];
  if (reviewer.tenants !== '*') where.push(`tenant = ANY(${param([...reviewer.tenants])}::text[])`);
  if (reviewer.connectors !== '*') where.push(`connector_id = ANY(${param([...reviewer.connectors])}::text[])`);
  if (query.status) where.push(`status = ANY(${param(query.status)}::text[])`);
  if (query.tenant) where.push(`tenant = ${param(query.tenant)}`);
  if (query.connector) where.push(`connector_id = ${param(query.connector)}`);
  if (query.requester) where.push(`requester_id = ${param(query.requester)}`);
  if (query.minAgeSeconds !== undefined) where.push(`requested_at <= ${param(new Date(now - query.minAgeSeconds * 1000).toISOString())}::timestamptz`);
  if (query.maxAgeSeconds !== undefined) where.push(`requested_at >= ${param(new Date(now - query.maxAgeSeconds * 1000).toISOString())}::timestamptz`);
  if (query.order === 'settled') where.push('settled_at IS NOT NULL');
  if (query.cursor) {
    const cursor = decodeCursor(query.cursor, query.order);
    where.push(`(${ORDER_COLUMN[query.order]}, approval_id) < (${param(cursor.at)}::timestamptz, ${param(cursor.id)})`);
  }
  return where;
}

/**
 * Lists approvals the reviewer may see from the PostgreSQL projection, newest request first or
 * (`order: 'settled'`) newest settlement first, with keyset pagination (stable while approvals
 * are added). Filters combine with AND, and never widen the reviewer's scope.
 */
export async function listApprovals(manager: EntityManager, schema: string, reviewer: Reviewer, query: ListQuery, now = Date.now()): Promise<ApprovalPage> {
  const params: unknown[] = [];
  const param = (value: unknown) => {
    params.push(value);
    return `$${params.length}`;
  };
  const where = conditions(reviewer, query, now, param);
  const column = ORDER_COLUMN[query.order];
  const sql = `SELECT ${VIEW_COLUMNS} FROM ${schemaIdent(schema)}.approvals
    ${where.length > 0 ? `WHERE ${where.join(' AND ')}` : ''}
    ORDER BY ${column} DESC, approval_id DESC LIMIT ${param(query.limit + 1)}`;
  const rows: ApprovalRow[] = await manager.query(sql, params);
  const page = rows.slice(0, query.limit);
  const last = page.at(-1);
  const lastAt = last && (query.order === 'settled' ? last.settled_at : last.requested_at);
  if (rows.length <= query.limit || !last || !lastAt) return { items: page.map(viewOf) };
  const by = query.order === 'settled' ? { by: 'settled' as const } : {};
  const cursor: Cursor = { at: lastAt.toISOString(), id: last.approval_id, ...by };
  return { items: page.map(viewOf), nextCursor: encodeCursor(cursor) };
}
