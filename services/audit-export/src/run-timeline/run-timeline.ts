import { type EntityManager } from 'typeorm';
import { z } from 'zod';
import { scopeParameter, tenantCondition, type TenantScope } from '../http/reader-auth.js';
import { schemaIdent } from '../projection/decisions-projection.js';
import { DECISION_COLUMNS, type DecisionDbRow, type DecisionView, toView } from '../query-decisions/decision-view.js';

// PostgreSQL text cannot hold NUL: a run id with one is refused rather than failing the query.
export const RunParams = z.object({
  runId: z
    .string()
    .min(1, 'must not be empty')
    .max(256, 'is too long')
    .refine((s) => !s.includes('\u0000'), 'must not contain NUL characters'),
});

/** Most decisions one timeline returns; a longer run is cut and says so. */
export const TIMELINE_LIMIT = 10_000;

export interface RunTimeline {
  readonly runId: string;
  readonly decisions: readonly DecisionView[];
  readonly truncated: boolean;
}

/**
 * Every decision of a run in log order: a run's events share one record key, hence one
 * partition, so (partition, offset) is their append order; log time orders across partitions.
 * Only the decisions of `scope`'s tenants are read.
 */
export async function runTimeline(manager: EntityManager, schema: string, runId: string, scope: TenantScope): Promise<RunTimeline> {
  const rows: DecisionDbRow[] = await manager.query(
    `SELECT ${DECISION_COLUMNS} FROM ${schemaIdent(schema)}.decisions WHERE run_id = $1 AND ${tenantCondition('$3')} ORDER BY log_time, partition, "offset" LIMIT $2`,
    [runId, TIMELINE_LIMIT + 1, scopeParameter(scope)],
  );
  return { runId, decisions: rows.slice(0, TIMELINE_LIMIT).map(toView), truncated: rows.length > TIMELINE_LIMIT };
}
