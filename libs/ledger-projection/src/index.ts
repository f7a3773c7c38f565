export { LEDGER_SNAPSHOT_VERSION, ledgerProjection } from './ledger-projection.js';
export { LEDGER_MIGRATIONS } from './ledger-migrations.js';
export { CHECKPOINT_REFRESH_MS, checkpointRetentionNeedMs, DEFAULT_CHECKPOINT_INTERVAL_MS, ledgerCheckpointEvents, ledgerCheckpoints } from './ledger-checkpoints.js';
export { LEDGER_SOURCE, LEDGER_TENANT, ledgerMeta } from './ledger-events.js';
