import { type Approval, applyApprovalEvent, type ApprovalsState, createApprovalsState, DEFAULT_SETTLED_RETAIN_MS, type HistoryEntry, LOG_LIMITS, pruneApprovals, type Verdict } from '@gatehouse/approvals';
import { type Keyring } from '@gatehouse/contracts';
import { mapStateCodec } from '@gatehouse/kafka';
import { CreateProjectionOffsets1764489600000, FoldSnapshots1766400000000, jsonbParam, PartitionOwners1767100000000, PartitionSnapshots1767100000001, ProjectionLogIdentity1765200000000, type ProjectionSpec, type Touch } from '@gatehouse/service-runtime';
import { type EntityManager } from 'typeorm';
import { ApprovalHistoryIndex1767300000000 } from './approval-history-index.migration.js';
import { CreateApprovalProjection1764662400000 } from './approval-projection.migrations.js';

/** The service's migrations, in order. */
export const APPROVAL_MIGRATIONS = [
  CreateProjectionOffsets1764489600000,
  CreateApprovalProjection1764662400000,
  ProjectionLogIdentity1765200000000,
  FoldSnapshots1766400000000,
  PartitionOwners1767100000000,
  PartitionSnapshots1767100000001,
  ApprovalHistoryIndex1767300000000,
] as const;

/** How long the service's fold keeps a settled approval, ms, unless configured: 7 days (the agent gateway's default too). */
export const DEFAULT_APPROVAL_RETAIN_MS = DEFAULT_SETTLED_RETAIN_MS;
/** The variable that sets it, for the service and its replay alike (a replay must forget what the service forgot). */
export const APPROVAL_RETAIN_ENV = 'GATEHOUSE_APPROVAL_RETAIN_MS';

/** The retention `env` configures (GATEHOUSE_APPROVAL_RETAIN_MS), or the default; a bad value is a TypeError naming the variable. */
export function approvalRetainMsFromEnv(env: NodeJS.ProcessEnv = process.env): number {
  const raw = env[APPROVAL_RETAIN_ENV];
  if (raw === undefined || raw === '') return DEFAULT_APPROVAL_RETAIN_MS;
  const value = Number(raw);
  if (!/^\d+$/.test(raw) || !Number.isSafeInteger(value) || value < 1) throw new TypeError(`${APPROVAL_RETAIN_ENV} must be a positive whole number of milliseconds`);
  return value;
}

/**
 * The approval fold's snapshot version: change it with any change to the fold's rules or state, so
 * a snapshot of the old rules is never loaded under the new ones (the service replays instead).
 */
// @2: an approval keeps its request's trace context (issue 21).
export const APPROVALS_SNAPSHOT_VERSION = 'approvals@2';

/** One history entry as stored (and served): times as ISO strings. */
export interface StoredHistoryEntry {
  readonly eventId: string;
  readonly type: HistoryEntry['type'];
  readonly at: string;
  readonly verdict: HistoryEntry['verdict'];
  readonly actor?: HistoryEntry['actor'];
  readonly decision?: HistoryEntry['decision'];
}

const iso = (ms: number) => new Date(ms).toISOString();

export function storedHistory(entries: readonly HistoryEntry[]): StoredHistoryEntry[] {
  return entries.map((h) => ({
    eventId: h.eventId,
    type: h.type,
    at: iso(h.logTime),
    verdict: h.verdict,
    ...(h.actor !== undefined && { actor: h.actor }),
    ...(h.decision !== undefined && { decision: h.decision }),
  }));
}

function settlement(approval: Approval) {
  switch (approval.status) {
    case 'pending':
      return { settled_at: null, settled_by: null, comment: null, edited_arguments: null, expiry_cause: null };
    case 'approved':
    case 'denied':
      return { settled_at: approval.decidedAt, settled_by: approval.reviewer, comment: approval.comment ?? null, edited_arguments: null, expiry_cause: null };
    case 'approved-with-edits':
      return { settled_at: approval.decidedAt, settled_by: approval.reviewer, comment: approval.comment ?? null, edited_arguments: { v: approval.editedArguments }, expiry_cause: null };
    case 'expired':
      return { settled_at: approval.expiredAt, settled_by: null, comment: null, edited_arguments: null, expiry_cause: approval.cause };
    case 'cancelled':
      return { settled_at: approval.cancelledAt, settled_by: approval.cancelledBy, comment: null, edited_arguments: null, expiry_cause: null };
    default: {
      const exhaustive: never = approval;
      return exhaustive;
    }
  }
}

function approvalRow(state: ApprovalsState, approval: Approval, touch: Touch) {
  const { request } = approval;
  return {
    approval_id: approval.approvalId,
    status: approval.status,
    tenant: request.scope.tenant,
    connector_id: request.scope.connectorId,
    execution_id: request.scope.executionId,
    arguments_hash: request.scope.argumentsHash,
    requester_id: request.requester.id,
    requester: request.requester,
    reason: request.reason,
    arguments: { v: request.arguments },
    redacted_paths: request.redactedPaths,
    input_schema: request.inputSchema ?? null,
    tool_description: request.toolDescription ?? null,
    dry_run_preview: request.dryRunPreview === undefined ? null : { v: request.dryRunPreview },
    requested_at: approval.requestedAt,
    deadline: approval.deadline,
    ...settlement(approval),
    quorum: request.quorum ?? null,
    votes: approval.votes.map((v) => ({ reviewer: v.reviewer, at: iso(v.at), ...(v.comment !== undefined && { comment: v.comment }) })),
    history: storedHistory(state.history.get(approval.approvalId) ?? []),
    partition: touch.partition,
    last_offset: touch.offset.toString(),
  };
}

async function upsertApprovals(manager: EntityManager, schemaSql: string, rows: readonly object[]): Promise<void> {
  await manager.query(
    `INSERT INTO ${schemaSql}.approvals AS a
       (approval_id, status, tenant, connector_id, execution_id, arguments_hash, requester_id, requester, reason, arguments,
        redacted_paths, input_schema, tool_description, dry_run_preview, requested_at, deadline, settled_at, settled_by,
        comment, edited_arguments, expiry_cause, quorum, votes, history, partition, last_offset, updated_at)
     SELECT r.approval_id, r.status, r.tenant, r.connector_id, r.execution_id, r.arguments_hash, r.requester_id, r.requester,
            r.reason, r.arguments -> 'v', r.redacted_paths, r.input_schema, r.tool_description, r.dry_run_preview -> 'v',
            to_timestamp(r.requested_at / 1000.0), to_timestamp(r.deadline / 1000.0), to_timestamp(r.settled_at / 1000.0),
            r.settled_by, r.comment, r.edited_arguments -> 'v', r.expiry_cause, r.quorum, r.votes, r.history, r.partition, r.last_offset, now()
       FROM jsonb_to_recordset($1::jsonb) AS r(approval_id text, status text, tenant text, connector_id text, execution_id text,
            arguments_hash text, requester_id text, requester jsonb, reason text, arguments jsonb, redacted_paths jsonb,
            input_schema jsonb, tool_description text, dry_run_preview jsonb, requested_at bigint, deadline bigint,
            settled_at bigint, settled_by jsonb, comment text, edited_arguments jsonb, expiry_cause text, quorum jsonb, votes jsonb, history jsonb,
            partition integer, last_offset bigint)
     ON CONFLICT (approval_id) DO UPDATE SET
       status = EXCLUDED.status, settled_at = EXCLUDED.settled_at, settled_by = EXCLUDED.settled_by, comment = EXCLUDED.comment,
       edited_arguments = EXCLUDED.edited_arguments, expiry_cause = EXCLUDED.expiry_cause, votes = EXCLUDED.votes, history = EXCLUDED.history,
       partition = EXCLUDED.partition, last_offset = EXCLUDED.last_offset, updated_at = now()
     -- A row is one lifecycle: the fold lets go of settled approvals after their retention, and a later
     -- request for the same id (a copy of the first, or a call asked for again) never overwrites it.
     WHERE a.requested_at = EXCLUDED.requested_at`,
    [jsonbParam(rows)],
  );
}

/**
 * The approval service's projection of `gatehouse.approvals.v1`: a row per requested approval,
 * written by the same fold the guard and the replay tool run, trusting `keyring` for decisions.
 * Events about an id that was never requested stay in the fold's history only (the fold rejects
 * them as unknown).
 */
export const approvalProjection = (keyring: Keyring, options: { readonly retainMs?: number } = {}): ProjectionSpec<'approvals', ApprovalsState, Verdict> => {
  const create = () => createApprovalsState(keyring, LOG_LIMITS, options.retainMs ?? DEFAULT_APPROVAL_RETAIN_MS);
  return {
    name: 'approvals',
    topicId: 'approvals',
    fold: {
      create,
      apply: applyApprovalEvent,
      prune: pruneApprovals,
      snapshot: mapStateCodec({ version: APPROVALS_SNAPSHOT_VERSION, create, maps: ['approvals', 'history'], counters: ['untrusted', 'forbidden', 'pruned'] }),
    },
    migrations: APPROVAL_MIGRATIONS,
    tables: [
      {
        table: 'approvals',
        idSql: 'approval_id',
        touched: ({ event }) => [event.payload.approvalId],
        row: (state, approvalId, touch) => {
          const approval = state.approvals.get(approvalId);
          return approval === undefined ? undefined : approvalRow(state, approval, touch);
        },
        upsert: upsertApprovals,
      },
    ],
  };
};
