export { APPROVAL_MIGRATIONS, APPROVAL_PROJECTION, storedHistory, type StoredHistoryEntry } from './approval-projection.js';
export { CreateApprovalProjection1764662400000 } from './approval-projection.migrations.js';
