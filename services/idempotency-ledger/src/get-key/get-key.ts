import { type JsonValue } from '@gatehouse/contracts';
import { ledgerKeyOf } from '@gatehouse/ledger';
import { schemaIdent } from '@gatehouse/service-runtime';
import { type EntityManager } from 'typeorm';
import { z } from 'zod';
import { type Caller, TenantName } from '../auth/agent-auth.js';
import { ok, type Outcome, refused } from '../errors.js';
import { LedgerKeyField } from '../http/request-fields.js';

export const KeyParams = z.object({ key: LedgerKeyField });

/** `?tenant=`: which of the caller's tenants (optional for an agent bound to one). */
export const KeyQuery = z.object({ tenant: TenantName.optional() });

/** A key as the projection has it. Lease tokens are never shown: they are the holder's capability. */
export interface KeyView {
  /** The caller's key, as asked for. */
  readonly key: string;
  readonly tenant: string;
  /** The key as the ledger stores it (what an operator's resolution names). */
  readonly ledgerKey: string;
  readonly status: 'pending' | 'completed' | 'ambiguous';
  readonly connectorId: string;
  readonly holder?: string;
  readonly ambiguous: boolean;
  readonly result?: JsonValue;
  /** Epoch ms, log time. */
  readonly reservedAt?: number;
  readonly pendingTtlMs?: number;
  readonly completedAt?: number;
  readonly ambiguousSince?: number;
  /** Where the last event about the key is on the log. */
  readonly position: { readonly partition: number; readonly offset: string };
}

interface KeyRecord {
  key: string;
  status: KeyView['status'];
  connector_id: string;
  holder: string | null;
  result: JsonValue | null;
  no_result: boolean;
  ambiguous: boolean;
  reserved_at: Date | null;
  pending_ttl_ms: string | null;
  completed_at: Date | null;
  ambiguous_since: Date | null;
  partition: number;
  last_offset: string;
}

/** Reads the caller's `clientKey` of its tenant from the projection in `schema`; LEDGER.KEY_NOT_FOUND when it has no row. */
export async function readKey(manager: EntityManager, schema: string, caller: Caller, clientKey: string): Promise<Outcome<KeyView>> {
  const key = ledgerKeyOf(caller.tenant, clientKey);
  const rows: KeyRecord[] = await manager.query(
    `SELECT key, status, connector_id, holder, result, result IS NULL AS no_result, ambiguous, reserved_at, pending_ttl_ms,
            completed_at, ambiguous_since, partition, last_offset
       FROM ${schemaIdent(schema)}.keys WHERE key = $1`,
    [key],
  );
  const row = rows[0];
  if (!row) return refused('LEDGER.KEY_NOT_FOUND');
  return ok({
    key: clientKey,
    tenant: caller.tenant,
    ledgerKey: row.key,
    status: row.status,
    connectorId: row.connector_id,
    ...(row.holder === null ? {} : { holder: row.holder }),
    ambiguous: row.ambiguous,
    ...(row.no_result ? {} : { result: row.result as JsonValue }),
    ...(row.reserved_at === null ? {} : { reservedAt: row.reserved_at.getTime() }),
    ...(row.pending_ttl_ms === null ? {} : { pendingTtlMs: Number(row.pending_ttl_ms) }),
    ...(row.completed_at === null ? {} : { completedAt: row.completed_at.getTime() }),
    ...(row.ambiguous_since === null ? {} : { ambiguousSince: row.ambiguous_since.getTime() }),
    position: { partition: row.partition, offset: String(row.last_offset) },
  });
}
