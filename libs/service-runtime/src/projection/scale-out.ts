import { type Provider } from '@nestjs/common';
import { type TopicId } from '@gatehouse/contracts';
import { type FoldProjection } from '@gatehouse/kafka';
import { type DataSource } from 'typeorm';
import { type ServiceConfig } from '../config.js';
import { OwnerForwarder } from '../owner-forwarding.js';
import { DATA_SOURCE, OWNER_FORWARDER } from '../tokens.js';
import { PartitionOwnerTable } from './partition-owners.js';
import { type ProjectionLogs } from './projection-logs.js';
import { type ProjectionSpec } from './projection-spec.js';
import { type ProjectionWriterOptions } from './projection-writer.js';

/** Who owns each partition of `projection`'s topic, as this replica (its name and URL) records and reads it. */
export function partitionOwners(dataSource: DataSource, config: ServiceConfig, projection: string, topic: string): PartitionOwnerTable {
  if (!config.scaleOut) throw new TypeError('partitionOwners needs GATEHOUSE_SCALE_OUT=partitions');
  return new PartitionOwnerTable(dataSource, config.database.schema, projection, topic, { owner: config.scaleOut.replicaId, url: config.scaleOut.url });
}

/**
 * What a fold service hands its engine for its projection: the writer of every partition (one
 * replica), or, scaled out (GATEHOUSE_SCALE_OUT=partitions), the owner table and each owned
 * partition's fenced writer (`startServiceFold`'s `owned`, less the group the service names).
 */
export async function foldProjection<T extends TopicId, S>(
  config: ServiceConfig,
  logs: ProjectionLogs,
  dataSource: DataSource,
  spec: ProjectionSpec<T, S, unknown>,
  topic: string,
  options: Omit<ProjectionWriterOptions, 'log' | 'owned'> = {},
): Promise<{ readonly projection: FoldProjection<T, S> } | { readonly owned: { readonly owners: PartitionOwnerTable; readonly projectionOf: (partition: number, epoch: number) => FoldProjection<T, S> } }> {
  if (!config.scaleOut) return { projection: await logs.projectionWriter(spec, topic, options) };
  return { owned: { owners: partitionOwners(dataSource, config, spec.name, topic), projectionOf: await logs.ownedProjectionWriters(spec, topic, options) } };
}

/**
 * The OWNER_FORWARDER provider: scaled out, a request for a key of another replica's partition is
 * forwarded to its owner (`OwnerForwarder`, waiting at most `timeoutMs`); one replica forwards nothing.
 */
export function ownerForwarderProvider(config: ServiceConfig, projection: string, topic: string, timeoutMs: number): Provider {
  return {
    provide: OWNER_FORWARDER,
    inject: [DATA_SOURCE],
    useFactory: (dataSource: DataSource) => (config.scaleOut ? new OwnerForwarder(partitionOwners(dataSource, config, projection, topic), config.scaleOut, timeoutMs) : undefined),
  };
}
