import { type EntityManager } from 'typeorm';
import { z } from 'zod';
import { ok, type Outcome, refused } from '../errors.js';
import { scopeParameter, tenantCondition, type TenantScope } from '../http/reader-auth.js';
import { schemaIdent } from '../projection/decisions-projection.js';
import { DECISION_COLUMNS, type DecisionDbRow, type DecisionView, toView } from '../query-decisions/decision-view.js';

export const DecisionIdParams = z.object({ id: z.uuid({ message: 'must be an event id (uuid)' }) });

/** One decision by event id; AUDIT.DECISION_NOT_FOUND when the projection has none of `scope`'s tenants with it. */
export async function readDecision(manager: EntityManager, schema: string, id: string, scope: TenantScope): Promise<Outcome<DecisionView>> {
  const rows: DecisionDbRow[] = await manager.query(`SELECT ${DECISION_COLUMNS} FROM ${schemaIdent(schema)}.decisions WHERE event_id = $1 AND ${tenantCondition('$2')}`, [id, scopeParameter(scope)]);
  const row = rows[0];
  return row ? ok(toView(row)) : refused('AUDIT.DECISION_NOT_FOUND');
}
