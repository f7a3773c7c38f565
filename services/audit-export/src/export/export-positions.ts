import { assertPartitionOwner, ProjectionOffsets } from '@gatehouse/service-runtime';
import { type DataSource } from 'typeorm';

function schemaIdent(schema: string): string {
  if (!/^[a-z_][a-z0-9_]{0,62}$/.test(schema)) throw new TypeError('schema names are lower-case identifiers');
  return `"${schema}"`;
}

/**
 * An export's next offsets per partition, in `projection_offsets` under `export:<name>`.
 * Written only after every sink acknowledged the records before them, in a transaction of
 * their own (the sinks are not in PostgreSQL, so there is nothing to share it with).
 */
export class ExportPositions {
  private readonly offsets: ProjectionOffsets;
  private readonly projection: string;

  constructor(
    private readonly dataSource: DataSource,
    private readonly schema: string,
    name: string,
    private readonly topic: string,
  ) {
    this.projection = `export:${name}`;
    this.offsets = new ProjectionOffsets(schema, this.projection);
  }

  load(): Promise<Record<number, string>> {
    return this.offsets.load(this.dataSource.manager, this.topic);
  }

  /**
   * Moves forward only (never back), so a late duplicate save cannot rewind. With `epoch` (a
   * scaled-out replica's claim of the partition), only while it is still the partition's: FOLD.FENCED otherwise.
   */
  async advance(partition: number, nextOffset: string, epoch?: number): Promise<void> {
    await this.dataSource.transaction(async (manager) => {
      if (epoch !== undefined) await assertPartitionOwner(manager, this.schema, { projection: this.projection, topic: this.topic, partition, epoch });
      await this.offsets.save(manager, this.topic, partition, nextOffset);
    });
  }

  /** The name positions and ownership are kept under: `export:<name>`. */
  get name(): string {
    return this.projection;
  }

  /** Replaces every position (a rewind or a jump), atomically. */
  async replace(positions: Readonly<Record<number, string>>): Promise<void> {
    await this.dataSource.transaction(async (manager) => {
      await manager.query(`DELETE FROM ${schemaIdent(this.schema)}.projection_offsets WHERE projection = $1 AND topic = $2`, [this.projection, this.topic]);
      for (const [partition, offset] of Object.entries(positions)) await this.offsets.save(manager, this.topic, Number(partition), offset);
    });
  }
}
