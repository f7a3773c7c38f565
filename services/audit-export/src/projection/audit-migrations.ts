import { CreateProjectionOffsets1764489600000, PartitionOwners1767100000000, ProjectionLogIdentity1765200000000 } from '@gatehouse/service-runtime';
import { CreateDecisionsProjection1765000000000, DecisionsLogAnchors1765300000000, DecisionsPositionPerTopic1765100000000 } from './decisions-projection.migrations.js';
import { DecisionsSourceVerification1765400000000 } from './verification.migrations.js';

/** The service's migrations, in order. */
export const AUDIT_EXPORT_MIGRATIONS = [
  CreateProjectionOffsets1764489600000,
  CreateDecisionsProjection1765000000000,
  DecisionsPositionPerTopic1765100000000,
  ProjectionLogIdentity1765200000000,
  DecisionsLogAnchors1765300000000,
  DecisionsSourceVerification1765400000000,
  PartitionOwners1767100000000,
] as const;
