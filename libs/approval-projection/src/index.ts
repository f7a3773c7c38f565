export { APPROVAL_MIGRATIONS, approvalProjection, storedHistory, type StoredHistoryEntry } from './approval-projection.js';
export { CreateApprovalProjection1764662400000 } from './approval-projection.migrations.js';
