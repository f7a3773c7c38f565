import { CreateProjectionOffsets1764489600000, FoldSnapshots1766400000000, PartitionOwners1767100000000, PartitionSnapshots1767100000001, ProjectionLogIdentity1765200000000 } from '@gatehouse/service-runtime';
import { CreateLedgerProjection1764576000000 } from './ledger-projection.migrations.js';

/** The service's migrations, in order. */
export const LEDGER_MIGRATIONS = [CreateProjectionOffsets1764489600000, CreateLedgerProjection1764576000000, ProjectionLogIdentity1765200000000, FoldSnapshots1766400000000, PartitionOwners1767100000000, PartitionSnapshots1767100000001] as const;
