import { BoundarySchema, DecisionOutcomeSchema } from '@gatehouse/contracts';
import { type EntityManager } from 'typeorm';
import { z } from 'zod';
import { ok, type Outcome, refused } from '../errors.js';
import { inScope, scopeParameter, tenantCondition, type TenantScope } from '../http/reader-auth.js';
import { schemaIdent } from '../projection/decisions-projection.js';
import { DECISION_COLUMNS, type DecisionDbRow, type DecisionView, toView } from './decision-view.js';

// PostgreSQL text cannot hold NUL: a filter with one is refused rather than failing the query.
const Text = z
  .string()
  .min(1, 'must not be empty')
  .max(256, 'is too long')
  .refine((s) => !s.includes('\u0000'), 'must not contain NUL characters');
const Time = z.iso.datetime({ offset: true, message: 'must be an ISO 8601 time with offset' });

/** Opaque keyset cursor: the last row's log time and id, base64url JSON. */
const CursorSchema = z.object({ t: z.iso.datetime({ offset: true }), id: z.uuid() });
type Cursor = z.infer<typeof CursorSchema>;

export function encodeCursor(cursor: Cursor): string {
  return Buffer.from(JSON.stringify(cursor), 'utf8').toString('base64url');
}

function decodeCursor(raw: string): Cursor | undefined {
  try {
    const parsed = CursorSchema.safeParse(JSON.parse(Buffer.from(raw, 'base64url').toString('utf8')));
    return parsed.success ? parsed.data : undefined;
  } catch {
    return undefined;
  }
}

/** The query string of `GET /v1/decisions`; unknown parameters are refused. */
export const DecisionQuerySchema = z
  .strictObject({
    tenant: Text.optional(),
    actor: Text.optional(),
    agent: Text.optional(),
    run: Text.optional(),
    tool: Text.optional(),
    decision: DecisionOutcomeSchema.optional(),
    boundary: BoundarySchema.optional(),
    policy: Text.optional(),
    /** `verified`, `unverified` or `forbidden`: the verdict on the record's source. */
    verification: z.enum(['verified', 'unverified', 'forbidden']).optional(),
    from: Time.optional(),
    to: Time.optional(),
    limit: z
      .string()
      .regex(/^\d{1,3}$/, 'must be a whole number from 1 to 500')
      .transform(Number)
      .refine((n) => n >= 1 && n <= 500, 'must be a whole number from 1 to 500')
      .optional(),
    cursor: z
      .string()
      .max(512, 'is not a cursor this API issued')
      .transform((raw, ctx) => {
        const cursor = decodeCursor(raw);
        if (!cursor) {
          ctx.addIssue({ code: 'custom', message: 'is not a cursor this API issued' });
          return z.NEVER;
        }
        return cursor;
      })
      .optional(),
  })
  .refine((q) => q.from === undefined || q.to === undefined || Date.parse(q.from) <= Date.parse(q.to), { message: 'must not be after "to"', path: ['from'] });
export type DecisionQuery = z.infer<typeof DecisionQuerySchema>;

export interface DecisionPage {
  readonly items: readonly DecisionView[];
  /** Pass as `cursor` for the next (older) page; null on the last page. */
  readonly nextCursor: string | null;
}

/**
 * Decisions matching every given filter, newest first by broker append time (ties by id),
 * with keyset pagination: a page never repeats or skips a row while new decisions arrive.
 * `from` is inclusive, `to` exclusive. Only the tenants of `scope` are read; a `tenant` filter
 * outside it is AUDIT.FORBIDDEN.
 */
export async function queryDecisions(manager: EntityManager, schema: string, query: DecisionQuery, scope: TenantScope): Promise<Outcome<DecisionPage>> {
  if (query.tenant !== undefined && !inScope(scope, query.tenant)) return refused('AUDIT.FORBIDDEN');
  const where: string[] = [];
  const params: unknown[] = [];
  const add = (sql: (p: string) => string, value: unknown) => {
    params.push(value);
    where.push(sql(`$${params.length}`));
  };
  add(tenantCondition, scopeParameter(scope));
  if (query.tenant !== undefined) add((p) => `tenant = ${p}`, query.tenant);
  if (query.actor !== undefined) add((p) => `actor_id = ${p}`, query.actor);
  if (query.agent !== undefined) add((p) => `agent_id = ${p}`, query.agent);
  if (query.run !== undefined) add((p) => `run_id = ${p}`, query.run);
  if (query.tool !== undefined) add((p) => `tool_id = ${p}`, query.tool);
  if (query.decision !== undefined) add((p) => `outcome = ${p}`, query.decision);
  if (query.boundary !== undefined) add((p) => `boundary = ${p}`, query.boundary);
  if (query.policy !== undefined) add((p) => `policy_bundle = ${p}`, query.policy);
  if (query.verification !== undefined) add((p) => `verification = ${p}`, query.verification);
  if (query.from !== undefined) add((p) => `log_time >= ${p}::timestamptz`, query.from);
  if (query.to !== undefined) add((p) => `log_time < ${p}::timestamptz`, query.to);
  if (query.cursor !== undefined) {
    params.push(query.cursor.t, query.cursor.id);
    where.push(`(log_time, event_id) < ($${params.length - 1}::timestamptz, $${params.length}::uuid)`);
  }
  const limit = query.limit ?? 50;
  params.push(limit + 1);
  const rows: DecisionDbRow[] = await manager.query(
    `SELECT ${DECISION_COLUMNS} FROM ${schemaIdent(schema)}.decisions
      ${where.length > 0 ? `WHERE ${where.join(' AND ')}` : ''}
      ORDER BY log_time DESC, event_id DESC
      LIMIT $${params.length}`,
    params,
  );
  const page = rows.slice(0, limit);
  const last = page.at(-1);
  return ok({
    items: page.map(toView),
    nextCursor: rows.length > limit && last ? encodeCursor({ t: last.log_time.toISOString(), id: last.event_id }) : null,
  });
}
