import { type Approval, type ApprovalEvent, type Verdict } from '@gatehouse/approvals';
import { type Actor, type AgentKey, agentKeyFromPem, agentMayClaimFor, ApprovalDecidedV1, ApprovalExpiredV1, type ApprovalRequested, createEvent, createKeyring, type JsonValue, type Keyring, readOptions, signEvent, type SigningKey, signingKeyFromPem, trustedEntryOf } from '@gatehouse/contracts';
import { generateKeyPairSync } from 'node:crypto';
import { type ApprovalLog, type ApprovalLogListener, ApprovalGatewayCore, validateTimeout } from './gateway-core.js';
import { type ApprovalGateway } from './types.js';

export interface InMemoryApprovalGatewayOptions {
  /** The log's clock: the append time of each record, ms (default `Date.now`). */
  readonly now?: () => number;
  /** Default wait for a decision, ms (default 60,000). */
  readonly defaultTimeoutMs?: number;
  /** Envelope source of appended events (default `guard:in-memory`). */
  readonly source?: string;
  /**
   * The approval service's key the test reviewer signs with (default: a fresh one), and the
   * keyring the fold trusts (default: that key's alone). `append` takes events as they are.
   */
  readonly signingKey?: SigningKey;
  readonly keyring?: Keyring;
  /**
   * The agent key requests are signed with. Default: a fresh key per tenant and requester id,
   * trusted by the default keyring (a test with its own `keyring` must pass its own key).
   */
  readonly agentKey?: AgentKey;
}

/** What a test reviewer decides. */
export interface ReviewerDecision {
  readonly verdict: 'approve' | 'approve-with-edits' | 'deny';
  /** Default `{ id: 'user:reviewer', role: 'approver', kind: 'human' }`. */
  readonly reviewer?: Actor;
  readonly comment?: string;
  readonly editedArguments?: JsonValue;
}

/**
 * The gateway over an in-process array instead of Kafka, for unit tests: the same core and
 * the same fold as the Kafka gateway, plus the reviewer's side (decide, expire) and a way to
 * make the log unreadable.
 */
export interface InMemoryApprovalGateway extends ApprovalGateway {
  /** Every record appended so far, in log order, with its append time. */
  readonly records: readonly { readonly event: ApprovalEvent; readonly logTime: number }[];
  /** The `ApprovalRequested` events on the log. */
  requests(): ApprovalRequested[];
  /** The first request on the log that matches (already there, or the next one appended). */
  waitForRequest(match?: (request: ApprovalRequested) => boolean): Promise<ApprovalRequested>;
  /** The folded approval. */
  approval(approvalId: string): Approval | undefined;
  /** Appends a reviewer's decision (as the approval service would) and returns the fold's verdict on it. */
  decide(approvalId: string, decision: ReviewerDecision): Verdict;
  /** Appends an expiry (as the approval service would) and returns the fold's verdict on it. */
  expire(approvalId: string): Verdict;
  /** Appends any approvals event as it is (unsigned, forged...) and returns the fold's verdict on it. */
  append(event: ApprovalEvent): Verdict;
  /** The approval service's key `decide` and `expire` sign with. */
  readonly signingKey: SigningKey;
  /** `false` makes the log unreadable, as when the broker is down: waits and new calls fail closed. */
  setAvailable(available: boolean): void;
}

const DEFAULT_REVIEWER: Actor = Object.freeze({ id: 'user:reviewer', role: 'approver', kind: 'human' });

class InMemoryApprovalLog implements ApprovalLog {
  readonly records: { event: ApprovalEvent; logTime: number }[] = [];
  available = true;
  private readonly watchers = new Set<(event: ApprovalEvent) => void>();

  constructor(
    private readonly listener: ApprovalLogListener,
    private readonly now: () => number,
  ) {}

  setAvailable(available: boolean): void {
    this.available = available;
    if (!available) this.listener.failed();
  }

  watch(watcher: (event: ApprovalEvent) => void): () => void {
    this.watchers.add(watcher);
    return () => this.watchers.delete(watcher);
  }

  // The fold is applied on append, so it is always caught up.
  async catchUp(): Promise<void> {
    if (!this.available) throw new Error('log unavailable');
  }

  async append(event: ApprovalEvent): Promise<void> {
    if (!this.available) throw new Error('log unavailable');
    this.appendNow(event);
  }

  appendNow(event: ApprovalEvent): void {
    const record = Object.freeze({ event, logTime: this.now() });
    this.records.push(record);
    this.listener.record(event, record.logTime);
    for (const watcher of [...this.watchers]) watcher(event);
  }

  async close(): Promise<void> {
    this.watchers.clear();
  }
}

/** An approval gateway over an in-process log, for unit tests (see `InMemoryApprovalGateway`). */
export function createInMemoryApprovalGateway(options: InMemoryApprovalGatewayOptions = {}): InMemoryApprovalGateway {
  const where = 'createInMemoryApprovalGateway';
  readOptions(where, options, ['now', 'defaultTimeoutMs', 'source', 'signingKey', 'keyring', 'agentKey']);
  if (options.now !== undefined && typeof options.now !== 'function') throw new TypeError(`${where}: now must be a function`);
  const now = options.now ?? Date.now;
  const signingKey = options.signingKey ?? signingKeyFromPem('approval-in-memory', 'approval', generateKeyPairSync('ed25519').privateKey.export({ type: 'pkcs8', format: 'pem' }).toString());
  if (options.keyring !== undefined && options.agentKey === undefined) throw new TypeError(`${where}: a keyring needs the agentKey it trusts`);
  // The default keyring is live: agent keys minted per tenant and requester join it before they sign.
  const trusted = new Map(createKeyring([trustedEntryOf(signingKey), ...(options.agentKey ? [trustedEntryOf(options.agentKey)] : [])]).keys);
  const keyring: Keyring = options.keyring ?? Object.freeze({ keys: trusted });
  const minted = new Map<string, AgentKey>();
  const claimKey = (tenant: string, requesterId: string): AgentKey | undefined => {
    if (options.agentKey) return agentMayClaimFor(options.agentKey, tenant) ? options.agentKey : undefined;
    const id = JSON.stringify([tenant, requesterId]);
    let key = minted.get(id);
    if (!key) {
      key = agentKeyFromPem(`agent-in-memory-${minted.size}`, { id: requesterId, tenants: [tenant] }, generateKeyPairSync('ed25519').privateKey.export({ type: 'pkcs8', format: 'pem' }).toString());
      minted.set(id, key);
      const entry = createKeyring([trustedEntryOf(key)]).keys.get(key.keyId);
      if (entry) trusted.set(key.keyId, entry);
    }
    return key;
  };
  let log: InMemoryApprovalLog | undefined;
  const core = new ApprovalGatewayCore((listener) => (log = new InMemoryApprovalLog(listener, now)), {
    keyring,
    claimKey,
    source: options.source ?? 'guard:in-memory',
    defaultTimeoutMs: options.defaultTimeoutMs === undefined ? 60_000 : validateTimeout(options.defaultTimeoutMs, 'defaultTimeoutMs', where),
    cancelTimeoutMs: 1_000,
  });
  const memory = log as unknown as InMemoryApprovalLog;

  const verdictOf = (event: ApprovalEvent): Verdict => {
    memory.appendNow(event);
    const history = core.fold.history.get(event.payload.approvalId) ?? [];
    return (history[history.length - 1] as { verdict: Verdict }).verdict;
  };
  const tenantOf = (approvalId: string) => core.fold.approvals.get(approvalId)?.request.scope.tenant ?? 'default';
  const requests = () => memory.records.flatMap((r) => (r.event.type === 'ApprovalRequested' ? [r.event] : []));

  return Object.freeze({
    awaitApproval: core.awaitApproval.bind(core),
    describe: core.describe.bind(core),
    useGrant: core.useGrant.bind(core),
    close: core.close.bind(core),
    records: memory.records,
    requests,
    waitForRequest(match: (request: ApprovalRequested) => boolean = () => true): Promise<ApprovalRequested> {
      const found = requests().find(match);
      if (found) return Promise.resolve(found);
      return new Promise((resolve) => {
        const stop = memory.watch((event) => {
          if (event.type === 'ApprovalRequested' && match(event)) {
            stop();
            resolve(event);
          }
        });
      });
    },
    approval: (approvalId: string) => core.fold.approvals.get(approvalId),
    decide(approvalId: string, decision: ReviewerDecision): Verdict {
      const event = signEvent(createEvent(
        ApprovalDecidedV1,
        { source: 'service:approval', tenant: tenantOf(approvalId), subject: approvalId },
        {
          approvalId,
          verdict: decision.verdict,
          reviewer: decision.reviewer ?? DEFAULT_REVIEWER,
          ...(decision.comment === undefined ? {} : { comment: decision.comment }),
          ...(decision.editedArguments === undefined ? {} : { editedArguments: decision.editedArguments }),
        },
      ), signingKey);
      return verdictOf(event);
    },
    expire(approvalId: string): Verdict {
      const deadline = core.fold.approvals.get(approvalId)?.deadline ?? now();
      return verdictOf(signEvent(createEvent(ApprovalExpiredV1, { source: 'service:approval', tenant: tenantOf(approvalId), subject: approvalId }, { approvalId, deadline: new Date(deadline).toISOString() }), signingKey));
    },
    append: verdictOf,
    signingKey,
    setAvailable: (available: boolean) => memory.setAvailable(available),
  });
}
