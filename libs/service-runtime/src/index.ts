export * from './services.js';
export * from './config.js';
export * from './database.js';
export * from './health.js';
export * from './tokens.js';
export { HealthController } from './health.controller.js';
export { ServiceRuntimeModule, type ServiceRuntimeOptions } from './service-runtime.module.js';
export { runService, startService } from './bootstrap.js';
export { closeIfStartFails, createServiceApp } from './create-app.js';
export { errorResponse, type ErrorBody, type ErrorMapping, GatehouseExceptionFilter } from './http-errors.js';
export { FORWARDED_BY_HEADER, OwnerForwarder, partitionMoving } from './owner-forwarding.js';
export { type ProjectedTable, type ProjectionSpec, schemaIdent, type Touch } from './projection/projection-spec.js';
export { ProjectionWriter, type ProjectionWriterOptions } from './projection/projection-writer.js';
export { assertPartitionOwner, fenced, type PartitionOwner, PartitionOwnerTable } from './projection/partition-owners.js';
export { foldProjection, ownerForwarderProvider, partitionOwners } from './projection/scale-out.js';
export {
  bindProjectionLog,
  judgeLog,
  LogBinding,
  type LogChange,
  logChangedError,
  type LogVerdict,
  type ProjectedLog,
  projectionLogChange,
  readLiveLog,
  readStoredLog,
  specLog,
} from './projection/projection-log.js';
export { FoldSnapshots1766400000000, PartitionOwners1767100000000, PartitionSnapshots1767100000001, ProjectionLogIdentity1765200000000 } from './projection/projection-log.migration.js';
export { type ProjectionLogHealth, ProjectionLogs, type ProjectionLogsOptions } from './projection/projection-logs.js';
export { ProjectionLogGuard } from './projection-log.guard.js';
export { createDeadLetterPublisher, type DeadLetterPublisher } from './dead-letters.js';
export { compareProjections, type ProjectionComparison, type ProjectionDifference, brokerClusterId, rebuildProjection, type RebuildOptions, type RebuildReport } from './projection/rebuild.js';
export { replayCliMain, runReplayCli, type ReplayCliOptions } from './projection/replay-cli.js';
export { checkStoredSnapshot, type SnapshotCheck } from './projection/snapshot-check.js';
export { nestFoldLog } from './fold-log.js';
export { admits, allowed, type Allowed, apiKeyDigest, type ApiKeyPrincipal, ApiKeySha256, bearerCredential, findByApiKey, parsePrincipalList, principalListText } from './api-keys.js';
export { type FieldProblem, parseRequestWith } from './parse-request.js';
export * from './openapi/index.js';
export * from './telemetry/index.js';
