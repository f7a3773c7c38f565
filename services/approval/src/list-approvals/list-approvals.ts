import { type EntityManager } from 'typeorm';
import { z } from 'zod';
import { schemaIdent } from '@gatehouse/service-runtime';
import { type Reviewer } from '../auth/reviewer-auth.js';
import { ApprovalError } from '../errors.js';
import { type ApprovalRow, type ApprovalView, VIEW_COLUMNS, viewOf } from '../http/approval-view.js';

const STATUSES = ['pending', 'approved', 'approved-with-edits', 'denied', 'expired', 'cancelled'] as const;

const MAX_AGE_SECONDS = 100 * 365 * 24 * 60 * 60;
/** A text filter; PostgreSQL text cannot hold NUL, so a filter with one is refused rather than failing the query. */
const Filter = z
  .string()
  .min(1)
  .max(256)
  .refine((s) => !s.includes('\u0000'), 'must not contain NUL characters');

/** The query of `GET /v1/approvals`. */
export const ListQuery = z.strictObject({
  /** One status or a comma-separated list. Default: every status. */
  status: z
    .string()
    .transform((s) => s.split(','))
    .pipe(z.array(z.enum(STATUSES)).min(1))
    .optional(),
  tenant: Filter.optional(),
  connector: Filter.optional(),
  requester: Filter.optional(),
  /** Only approvals requested at least / at most this many seconds ago (at most a century: the bound must stay a date). */
  minAgeSeconds: z.coerce.number().int().min(0).max(MAX_AGE_SECONDS).optional(),
  maxAgeSeconds: z.coerce.number().int().min(0).max(MAX_AGE_SECONDS).optional(),
  limit: z.coerce.number().int().min(1).max(200).default(50),
  /** `nextCursor` of the previous page. */
  cursor: z.string().max(512).optional(),
});
export type ListQuery = z.infer<typeof ListQuery>;

export interface ApprovalPage {
  readonly items: readonly ApprovalView[];
  /** Present when more items follow: pass it as `cursor`. */
  readonly nextCursor?: string;
}

interface Cursor {
  readonly at: string;
  readonly id: string;
}

const CursorSchema = z.strictObject({ at: z.iso.datetime(), id: z.string().regex(/^appr_[0-9a-f]{64}$/) });

function decodeCursor(cursor: string): Cursor {
  try {
    return CursorSchema.parse(JSON.parse(Buffer.from(cursor, 'base64url').toString('utf8')));
  } catch {
    throw new ApprovalError('APPROVAL.INVALID_REQUEST', { fields: [{ field: 'cursor', problem: 'not a cursor this API issued' }] }, undefined, 'invalid field(s): "cursor"');
  }
}

const encodeCursor = (cursor: Cursor) => Buffer.from(JSON.stringify(cursor), 'utf8').toString('base64url');

/**
 * Lists approvals the reviewer may see, newest request first, from the PostgreSQL projection,
 * with keyset pagination (stable while approvals are added). Filters combine with AND.
 */
export async function listApprovals(manager: EntityManager, schema: string, reviewer: Reviewer, query: ListQuery, now = Date.now()): Promise<ApprovalPage> {
  const where: string[] = [];
  const params: unknown[] = [];
  const param = (value: unknown) => {
    params.push(value);
    return `$${params.length}`;
  };
  if (reviewer.tenants !== '*') where.push(`tenant = ANY(${param([...reviewer.tenants])}::text[])`);
  if (reviewer.connectors !== '*') where.push(`connector_id = ANY(${param([...reviewer.connectors])}::text[])`);
  if (query.status) where.push(`status = ANY(${param(query.status)}::text[])`);
  if (query.tenant) where.push(`tenant = ${param(query.tenant)}`);
  if (query.connector) where.push(`connector_id = ${param(query.connector)}`);
  if (query.requester) where.push(`requester_id = ${param(query.requester)}`);
  if (query.minAgeSeconds !== undefined) where.push(`requested_at <= ${param(new Date(now - query.minAgeSeconds * 1000).toISOString())}::timestamptz`);
  if (query.maxAgeSeconds !== undefined) where.push(`requested_at >= ${param(new Date(now - query.maxAgeSeconds * 1000).toISOString())}::timestamptz`);
  if (query.cursor) {
    const cursor = decodeCursor(query.cursor);
    where.push(`(requested_at, approval_id) < (${param(cursor.at)}::timestamptz, ${param(cursor.id)})`);
  }
  const sql = `SELECT ${VIEW_COLUMNS} FROM ${schemaIdent(schema)}.approvals
    ${where.length > 0 ? `WHERE ${where.join(' AND ')}` : ''}
    ORDER BY requested_at DESC, approval_id DESC LIMIT ${param(query.limit + 1)}`;
  const rows: ApprovalRow[] = await manager.query(sql, params);
  const page = rows.slice(0, query.limit);
  const last = page.at(-1);
  return {
    items: page.map(viewOf),
    ...(rows.length > query.limit && last && { nextCursor: encodeCursor({ at: last.requested_at.toISOString(), id: last.approval_id }) }),
  };
}
