import { type DataSource } from 'typeorm';
import { z } from 'zod';
import { type ApprovalChange } from '../engine/approval-engine.js';

/** A connection held for LISTEN (a pg pool client: `notification`, `error` and `end` events). */
interface ListeningClient {
  query(sql: string): Promise<unknown>;
  on(event: 'notification', listener: (message: { channel: string; payload?: string }) => void): unknown;
  on(event: 'error' | 'end', listener: () => void): unknown;
  off(event: 'notification' | 'error' | 'end', listener: (...args: never[]) => void): unknown;
}

type Obtain = () => Promise<[ListeningClient, (error?: unknown) => void]>;
type Log = (level: 'warn', message: string, fields: Record<string, string | number | boolean>) => void;

// What one replica tells the others: ids, statuses and names only, as the event stream carries.
const NoticeSchema = z.strictObject({
  from: z.string().min(1).max(128),
  change: z.strictObject({
    approvalId: z.string().regex(/^appr_[0-9a-f]{64}$/),
    type: z.enum(['ApprovalRequested', 'ApprovalDecided', 'ApprovalExpired', 'ApprovalCancelled', 'ApprovalUsed']),
    status: z.enum(['pending', 'approved', 'approved-with-edits', 'denied', 'expired', 'cancelled']),
    tenant: z.string().min(1).max(256),
    connectorId: z.string().min(1).max(256),
    at: z.string().max(40),
  }),
});

const RELISTEN_MS = 1_000;

/** The PostgreSQL channel the replicas of one projection schema share (an identifier of at most 63 bytes). */
export function changeChannel(schema: string): string {
  return `gh_approval_changes_${schema}`.slice(0, 63);
}

/**
 * The approval changes of every replica, for each replica's event stream. Scaled out, a replica
 * folds only its own partitions, so it learns of a change on another's from that owner: the owner
 * NOTIFYs it on a channel of the shared database once its projection holds the change, and every
 * replica LISTENs. A replica relays what the others announce and skips its own (its stream has
 * it already). Only the service's database role can NOTIFY here; what arrives is still parsed and
 * anything unexpected dropped. A lost listening connection is opened again (changes meanwhile are
 * missed, as a reconnecting browser misses them: the inbox re-reads the list).
 */
export class ReplicaChanges {
  private client: ListeningClient | undefined;
  private release: ((error?: unknown) => void) | undefined;
  /** Takes this object's listeners off the held connection (never the pool's own). */
  private detach: (() => void) | undefined;
  private retry: NodeJS.Timeout | undefined;
  private stopped = false;
  relayed = 0;

  private constructor(
    private readonly obtain: Obtain,
    private readonly publishQuery: (sql: string, params: unknown[]) => Promise<unknown>,
    private readonly channel: string,
    private readonly replicaId: string,
    private readonly relay: (change: ApprovalChange) => void,
    private readonly log: Log,
  ) {}

  /** Starts listening on the shared channel; resolves once LISTEN is in place. */
  static async start(options: { readonly dataSource: DataSource; readonly schema: string; readonly replicaId: string; readonly relay: (change: ApprovalChange) => void; readonly log: Log }): Promise<ReplicaChanges> {
    const { dataSource } = options;
    const driver = dataSource.driver as unknown as { obtainMasterConnection(): Promise<[ListeningClient, (error?: unknown) => void]> };
    const changes = new ReplicaChanges(
      () => driver.obtainMasterConnection(),
      (sql, params) => dataSource.query(sql, params),
      changeChannel(options.schema),
      options.replicaId,
      options.relay,
      options.log,
    );
    await changes.listen();
    return changes;
  }

  /** Tells the other replicas about a change this replica's projection now holds. */
  announce(change: ApprovalChange): void {
    if (this.stopped) return;
    this.publishQuery('SELECT pg_notify($1, $2)', [this.channel, JSON.stringify({ from: this.replicaId, change })]).catch(() =>
      this.log('warn', 'could not tell the other replicas about a change', { code: 'APPROVAL.CHANGE_NOTIFY_FAILED' }),
    );
  }

  async stop(): Promise<void> {
    this.stopped = true;
    clearTimeout(this.retry);
    const [client, release, detach] = [this.client, this.release, this.detach];
    this.client = this.release = this.detach = undefined;
    if (!client || !release || !detach) return;
    await client.query(`UNLISTEN "${this.channel}"`).catch(() => undefined);
    detach();
    release();
  }

  private async listen(): Promise<void> {
    const [client, release] = await this.obtain();
    const onNotification = (message: { channel: string; payload?: string }) => {
      if (message.channel === this.channel) this.received(message.payload);
    };
    const detach = () => {
      client.off('notification', onNotification);
      client.off('error', lost);
      client.off('end', lost);
    };
    const lost = () => {
      if (this.client !== client) return;
      this.client = this.release = this.detach = undefined;
      detach();
      release(new Error('listening connection lost'));
      this.log('warn', 'lost the connection that hears other replicas; listening again', { code: 'APPROVAL.CHANGE_LISTEN_LOST' });
      this.again();
    };
    client.on('error', lost);
    client.on('end', lost);
    client.on('notification', onNotification);
    try {
      await client.query(`LISTEN "${this.channel}"`);
    } catch (error) {
      detach();
      release(error);
      throw error;
    }
    this.client = client;
    this.release = release;
    this.detach = detach;
  }

  private again(): void {
    if (this.stopped) return;
    this.retry = setTimeout(() => {
      this.listen().catch(() => this.again());
    }, RELISTEN_MS);
    this.retry.unref();
  }

  private received(payload: string | undefined): void {
    let parsed: z.infer<typeof NoticeSchema>;
    try {
      parsed = NoticeSchema.parse(JSON.parse(payload ?? ''));
    } catch {
      this.log('warn', 'dropped a change notice that is not one', { code: 'APPROVAL.CHANGE_NOTICE_INVALID' });
      return;
    }
    if (parsed.from === this.replicaId) return;
    this.relayed += 1;
    this.relay(parsed.change satisfies ApprovalChange);
  }
}
