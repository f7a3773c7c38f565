import { type EntityManager } from 'typeorm';
import { z } from 'zod';
import { ok, type Outcome, refused } from '../errors.js';
import { schemaIdent } from '../projection/decisions-projection.js';
import { DECISION_COLUMNS, type DecisionDbRow, type DecisionView, toView } from '../query-decisions/decision-view.js';

export const DecisionIdParams = z.object({ id: z.uuid({ message: 'must be an event id (uuid)' }) });

/** One decision by event id; AUDIT.DECISION_NOT_FOUND when the projection has none. */
export async function readDecision(manager: EntityManager, schema: string, id: string): Promise<Outcome<DecisionView>> {
  const rows: DecisionDbRow[] = await manager.query(`SELECT ${DECISION_COLUMNS} FROM ${schemaIdent(schema)}.decisions WHERE event_id = $1`, [id]);
  const row = rows[0];
  return row ? ok(toView(row)) : refused('AUDIT.DECISION_NOT_FOUND');
}
