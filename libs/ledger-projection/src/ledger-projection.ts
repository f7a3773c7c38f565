import { applyLedgerEvent, type BudgetState, createLedgerState, type KeyState, type LedgerState, type Verdict } from '@gatehouse/ledger';
import { type Keyring } from '@gatehouse/contracts';
import { mapStateCodec } from '@gatehouse/kafka';
import { jsonbParam, type ProjectionSpec, type Touch } from '@gatehouse/service-runtime';
import { type EntityManager } from 'typeorm';
import { ledgerCheckpoints } from './ledger-checkpoints.js';
import { LEDGER_MIGRATIONS } from './ledger-migrations.js';

/** The ledger fold's snapshot version: change it with any change to the fold's rules or state. */
export const LEDGER_SNAPSHOT_VERSION = 'ledger@1';

function keyRow(key: string, state: KeyState, touch: Touch) {
  const base = { key, partition: touch.partition, last_offset: touch.offset.toString() };
  switch (state.status) {
    case 'pending':
      return {
        ...base,
        status: state.status,
        connector_id: state.connectorId,
        holder: state.holder,
        lease_token: state.leaseToken,
        result_box: null,
        ambiguous: state.ambiguous,
        reserved_at: state.reservedAt,
        pending_ttl_ms: state.pendingTtlMs,
        completed_at: null,
        ambiguous_since: null,
      };
    case 'completed':
      return {
        ...base,
        status: state.status,
        connector_id: state.connectorId,
        holder: null,
        lease_token: state.leaseToken,
        // Boxed, so that a recorded `null` stays JSON null and "no result" stays SQL NULL.
        result_box: state.result === undefined ? null : { v: state.result },
        ambiguous: false,
        reserved_at: null,
        pending_ttl_ms: null,
        completed_at: state.completedAt,
        ambiguous_since: null,
      };
    case 'ambiguous':
      return {
        ...base,
        status: state.status,
        connector_id: state.connectorId,
        holder: null,
        lease_token: null,
        result_box: null,
        ambiguous: true,
        reserved_at: null,
        pending_ttl_ms: null,
        completed_at: null,
        ambiguous_since: state.since,
      };
    default: {
      const exhaustive: never = state;
      return exhaustive;
    }
  }
}

function budgetRow(budgetKey: string, state: BudgetState, touch: Touch) {
  const base = { budget_key: budgetKey, algorithm: state.algorithm, count: state.count, window_ms: state.windowMs, partition: touch.partition, last_offset: touch.offset.toString() };
  switch (state.algorithm) {
    case 'fixed-window':
      return { ...base, window_start: state.windowStart, used: state.used, admitted: null };
    case 'sliding-window':
      return { ...base, window_start: null, used: null, admitted: [...state.admitted] };
    default: {
      const exhaustive: never = state;
      return exhaustive;
    }
  }
}

async function upsertKeys(manager: EntityManager, schemaSql: string, rows: readonly object[]): Promise<void> {
  await manager.query(
    `INSERT INTO ${schemaSql}.keys
         (key, status, connector_id, holder, lease_token, result, ambiguous, reserved_at, pending_ttl_ms, completed_at, ambiguous_since, partition, last_offset, updated_at)
       SELECT r.key, r.status, r.connector_id, r.holder, r.lease_token, r.result_box -> 'v', r.ambiguous,
              to_timestamp(r.reserved_at / 1000.0), r.pending_ttl_ms, to_timestamp(r.completed_at / 1000.0),
              to_timestamp(r.ambiguous_since / 1000.0), r.partition, r.last_offset, now()
         FROM jsonb_to_recordset($1::jsonb) AS r(key text, status text, connector_id text, holder text, lease_token text,
              result_box jsonb, ambiguous boolean, reserved_at bigint, pending_ttl_ms bigint, completed_at bigint,
              ambiguous_since bigint, partition integer, last_offset bigint)
       ON CONFLICT (key) DO UPDATE SET
         status = EXCLUDED.status, connector_id = EXCLUDED.connector_id, holder = EXCLUDED.holder,
         lease_token = EXCLUDED.lease_token, result = EXCLUDED.result, ambiguous = EXCLUDED.ambiguous,
         reserved_at = EXCLUDED.reserved_at, pending_ttl_ms = EXCLUDED.pending_ttl_ms, completed_at = EXCLUDED.completed_at,
         ambiguous_since = EXCLUDED.ambiguous_since, partition = EXCLUDED.partition, last_offset = EXCLUDED.last_offset,
         updated_at = now()`,
    [jsonbParam(rows)],
  );
}

async function upsertBudgets(manager: EntityManager, schemaSql: string, rows: readonly object[]): Promise<void> {
  await manager.query(
    `INSERT INTO ${schemaSql}.budgets
         (budget_key, algorithm, count, window_ms, window_start, used, admitted, partition, last_offset, updated_at)
       SELECT r.budget_key, r.algorithm, r.count, r.window_ms, to_timestamp(r.window_start / 1000.0), r.used, r.admitted,
              r.partition, r.last_offset, now()
         FROM jsonb_to_recordset($1::jsonb) AS r(budget_key text, algorithm text, count integer, window_ms bigint,
              window_start bigint, used integer, admitted jsonb, partition integer, last_offset bigint)
       ON CONFLICT (budget_key) DO UPDATE SET
         algorithm = EXCLUDED.algorithm, count = EXCLUDED.count, window_ms = EXCLUDED.window_ms,
         window_start = EXCLUDED.window_start, used = EXCLUDED.used, admitted = EXCLUDED.admitted,
         partition = EXCLUDED.partition, last_offset = EXCLUDED.last_offset, updated_at = now()`,
    [jsonbParam(rows)],
  );
}

/**
 * The ledger projection: a row per idempotency key and per budget, each the fold's state after
 * the last record that touched it. A key whose state the fold dropped loses its row.
 */
export const ledgerProjection = (keyring: Keyring): ProjectionSpec<'ledger', LedgerState, Verdict> => ({
  name: 'ledger',
  topicId: 'ledger',
  fold: {
    create: () => createLedgerState(keyring),
    apply: applyLedgerEvent,
    snapshot: mapStateCodec({ version: LEDGER_SNAPSHOT_VERSION, create: () => createLedgerState(keyring), maps: ['keys', 'budgets', 'openKeysByPrincipal', 'budgetsByPrincipal'], counters: ['untrusted'] }),
  },
  migrations: LEDGER_MIGRATIONS,
  // Rows and budgets are the fold of the log alone (answers are the fold's verdicts, GET reads
  // what a commit made visible), so a commit lost in a crash is replayed from the log at the next start.
  commitDurability: 'log',
  // The topic deletes records by time: a start, or a rebuild, over a log whose beginning is gone begins from its checkpoints.
  checkpoints: (kafka, namespace) => ledgerCheckpoints({ kafka, namespace, keyring, fold: LEDGER_SNAPSHOT_VERSION, timeoutMs: 60_000 }),
  tables: [
    {
      table: 'keys',
      idSql: 'key',
      touched: ({ event }) => (event.type === 'LedgerRateConsumed' || event.type === 'LedgerCheckpoint' ? [] : [event.payload.key]),
      row: (state, key, touch) => {
        const current = state.keys.get(key);
        return current === undefined ? undefined : keyRow(key, current, touch);
      },
      upsert: upsertKeys,
      remove: async (manager, schemaSql, keys) => {
        await manager.query(`DELETE FROM ${schemaSql}.keys WHERE key = ANY($1::text[])`, [keys]);
      },
    },
    {
      table: 'budgets',
      idSql: 'budget_key',
      touched: ({ event }) => (event.type === 'LedgerRateConsumed' ? [event.payload.budgetKey] : []),
      row: (state, budgetKey, touch) => {
        const current = state.budgets.get(budgetKey);
        return current === undefined ? undefined : budgetRow(budgetKey, current, touch);
      },
      upsert: upsertBudgets,
    },
  ],
});
