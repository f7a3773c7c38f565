export { APPROVAL_MIGRATIONS, APPROVAL_RETAIN_ENV, approvalProjection, approvalRetainMsFromEnv, APPROVALS_SNAPSHOT_VERSION, DEFAULT_APPROVAL_RETAIN_MS, storedHistory, type StoredHistoryEntry } from './approval-projection.js';
export { CreateApprovalProjection1764662400000 } from './approval-projection.migrations.js';
