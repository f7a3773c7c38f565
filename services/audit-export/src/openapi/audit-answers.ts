import { BoundarySchema, DecisionOutcomeSchema } from '@gatehouse/contracts';
import { z } from 'zod';
import { type AuditStatus } from '../audit-runtime.js';
import { type ExportStatus } from '../export/export-pipeline.js';
import { type DecisionView } from '../query-decisions/decision-view.js';
import { type DecisionPage } from '../query-decisions/query-decisions.js';
import { type RunTimeline } from '../run-timeline/run-timeline.js';

// What the routes answer, as schemas: the document is generated from them, and the OpenAPI spec
// parses the service's real answers with them (`satisfies` ties each to the type the route returns).

const Time = z.iso.datetime();
const nullable = z.string().nullable();

/** A decision as the query API returns it: the allowlist (`DECISION_FIELDS`), nothing else. */
export const DecisionViewSchema = z
  .strictObject({
    id: z.uuid().describe('Event id: de-duplicate on it.'),
    decisionId: z.string(),
    tenant: z.string(),
    subject: z.string(),
    source: z.string(),
    time: Time.describe('When the producer made the decision.'),
    logTime: Time.describe('Broker append time: what lists are ordered by.'),
    boundary: BoundarySchema,
    outcome: DecisionOutcomeSchema,
    code: z.string(),
    reason: z.string().describe('The static text chosen by the code.'),
    actor: z.strictObject({ id: z.string(), role: nullable, kind: nullable }).nullable(),
    agentId: nullable,
    runId: nullable,
    toolId: nullable,
    policy: z.strictObject({ bundleId: z.string(), revision: z.number().int().nullable(), ruleId: nullable }).nullable(),
    correlationId: nullable,
    causationId: nullable,
    entryPath: nullable,
    threadId: nullable,
    redactedPaths: z.array(z.string()).describe('Paths that were redacted, never the values.'),
    durationMs: z.number().nullable(),
    chain: z.strictObject({ producer: z.string(), seq: z.number().int(), prevHash: nullable }).nullable(),
    position: z.strictObject({ partition: z.number().int(), offset: z.string() }),
    verification: z
      .strictObject({
        status: z.enum(['verified', 'unverified', 'forbidden']),
        reason: nullable.describe('Why it is forbidden: `forbidden-source`, `forbidden-tenant`, `untrusted-checkpoint`.'),
        keyId: nullable,
        checkpoint: nullable,
      })
      .describe('Whether a checkpoint signed by a key that may speak for its source and tenant lists it.'),
  })
  .describe('A decision, newest first by log time in lists') satisfies z.ZodType<DecisionView>;

export const DecisionPageSchema = z.strictObject({
  items: z.array(DecisionViewSchema),
  nextCursor: z.string().nullable().describe('Pass as `cursor` for the next (older) page; null on the last page.'),
}) satisfies z.ZodType<DecisionPage>;

export const RunTimelineSchema = z.strictObject({
  runId: z.string(),
  decisions: z.array(DecisionViewSchema).describe('In log order; at most 10,000.'),
  truncated: z.boolean(),
}) satisfies z.ZodType<RunTimeline>;

const Offsets = z.record(z.string(), z.string()).describe('Per partition, the next offset.');

const exportStatus = {
  name: z.string(),
  phase: z.enum(['starting', 'running', 'stopped', 'standby']).describe('`standby`: another replica holds the export.'),
  paused: z.boolean().describe('A sink is down and the export waits for it.'),
  positions: Offsets,
  sinks: z.array(z.string()),
  exported: z.number().int(),
  sinkFailures: z.number().int(),
  skipped: z.number().int(),
};

/** `GET /v1/exports`: the export of this replica, or none without a sink. */
export const ExportListSchema = z.array(z.strictObject(exportStatus)) satisfies z.ZodType<readonly ExportStatus[]>;

export const RestartAnswerSchema = z.strictObject({ name: z.string(), positions: Offsets });

const progress = z.array(z.strictObject({ partition: z.number().int(), next: z.string(), end: z.string(), lag: z.number().int() }));

export const AuditStatusSchema = z.strictObject({
  projection: z.strictObject({
    start: z
      .strictObject({ from: z.enum(['stored-offsets', 'offset-0']), records: z.number().int() })
      .nullable()
      .describe('Null until the first read began.'),
    partitions: progress,
    lag: z.number().int().describe('Records on the topic not yet in the committed rows.'),
  }),
  export: z
    .strictObject({ ...exportStatus, lag: z.number().int().nullable() })
    .nullable()
    .describe('Null without a sink; `lag` null while this replica stands by.'),
}) satisfies z.ZodType<AuditStatus>;

/**
 * Where `POST /v1/exports/{name}/restart` moves the export to, as `parseStartPosition` reads it
 * (the route's own check is that function; the OpenAPI spec holds the two to the same answers).
 */
export const StartPositionSchema = z.union([
  z.enum(['earliest', 'latest']),
  z.iso.datetime({ offset: true }).describe('The first record appended at or after this broker time.'),
  z
    .record(z.string().regex(/^\d{1,5}$/), z.string().regex(/^\d{1,19}$/))
    .refine((offsets) => Object.keys(offsets).length > 0, 'names at least one partition')
    .meta({ minProperties: 1, description: 'Per partition number, the next offset to export (at least one).' }),
]);
