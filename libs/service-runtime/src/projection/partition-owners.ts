import { GatehouseError } from '@gatehouse/contracts';
import { type PartitionOwners } from '@gatehouse/kafka';
import { type DataSource, type EntityManager } from 'typeorm';
import { schemaIdent } from './projection-spec.js';

/** The refusal of a write by a replica whose partition another replica has claimed since. */
export function fenced(partition: number): GatehouseError {
  return new GatehouseError('FOLD.FENCED', 'another replica owns the partition now', { category: 'conflict', retryable: true, details: { partition } });
}

/**
 * Inside a write's transaction: throws FOLD.FENCED unless `epoch` is still the partition's owner
 * epoch. The shared row lock orders the write against a new owner's claim (which updates the row):
 * once that claim commits, this check fails, so a replica that lost a partition commits nothing for it.
 */
export async function assertPartitionOwner(manager: EntityManager, schema: string, owner: { readonly projection: string; readonly topic: string; readonly partition: number; readonly epoch: number }): Promise<void> {
  const rows: { epoch: string }[] = await manager.query(
    `SELECT epoch::text AS epoch FROM ${schemaIdent(schema)}.partition_owners WHERE projection = $1 AND topic = $2 AND partition = $3 FOR SHARE`,
    [owner.projection, owner.topic, owner.partition],
  );
  if (rows[0]?.epoch !== String(owner.epoch)) throw fenced(owner.partition);
}

/** Who owns a partition of a scaled-out fold, and where to forward requests for its keys. */
export interface PartitionOwner {
  readonly owner: string;
  /** The owner's base URL (`GATEHOUSE_ADVERTISED_URL`), when it serves HTTP. */
  readonly url: string | undefined;
  readonly epoch: number;
}

/**
 * The replicas' record of who owns each partition of a fold (`<schema>.partition_owners`): a claim
 * raises the partition's epoch past every earlier owner's and names the claimer and its URL, in one
 * statement (its row lock orders it against the former owner's projection writes, which check the
 * epoch under a shared lock on the same row: once the claim commits, they are refused).
 */
export class PartitionOwnerTable implements PartitionOwners {
  private readonly schemaSql: string;

  constructor(
    private readonly dataSource: DataSource,
    schema: string,
    private readonly projection: string,
    /** The topic's full name (namespace included). */
    private readonly topic: string,
    /** This replica: its name, and the URL other replicas forward requests to. */
    private readonly self: { readonly owner: string; readonly url?: string | undefined },
  ) {
    this.schemaSql = schemaIdent(schema);
  }

  async claim(partition: number): Promise<number> {
    const rows: { epoch: string }[] = await this.dataSource.query(
      `INSERT INTO ${this.schemaSql}.partition_owners AS o (projection, topic, partition, epoch, owner, url)
       VALUES ($1, $2, $3, 1, $4, $5)
       ON CONFLICT (projection, topic, partition) DO UPDATE SET epoch = o.epoch + 1, owner = EXCLUDED.owner, url = EXCLUDED.url, claimed_at = now()
       RETURNING epoch::text AS epoch`,
      [this.projection, this.topic, partition, this.self.owner, this.self.url ?? null],
    );
    return Number(rows[0]?.epoch);
  }

  /** The partition's owner as last claimed (undefined: never claimed). */
  async ownerOf(partition: number): Promise<PartitionOwner | undefined> {
    const rows: { owner: string; url: string | null; epoch: string }[] = await this.dataSource.query(
      `SELECT owner, url, epoch::text AS epoch FROM ${this.schemaSql}.partition_owners WHERE projection = $1 AND topic = $2 AND partition = $3`,
      [this.projection, this.topic, partition],
    );
    const row = rows[0];
    return row ? { owner: row.owner, url: row.url ?? undefined, epoch: Number(row.epoch) } : undefined;
  }
}
