import { verify } from 'node:crypto';
import { eventDigest } from './chain.js';
import { createEvent } from './codec.js';
import { type AuditChainCheckpoint, AuditChainCheckpointV1 } from './events/audit.js';
import { type AgentKey, EventSignatureSchema, type Keyring, type Signer, type SigningKey, signedBytes, signEvent, type TrustedKey } from './signing.js';

/**
 * Audit you can verify per source. Every producer of audit records signs checkpoints over the
 * digests of what it wrote (`AuditChainCheckpointV1`); a record counts as written by its
 * `source` for its `tenant` only when a checkpoint signed by a key that may speak for both lists
 * its digest:
 *
 * - `service:approval`, `service:idempotency-ledger`, `service:policy`: only a key of that
 *   service's signer (`SERVICE_SOURCE_SIGNERS`). A service vouches for records of any tenant.
 * - `guard:*` (an agent process): only an agent claim key whose binding includes the record's
 *   tenant. No agent key speaks for `service:*`, and no service key for `guard:*`.
 * - Any other source (`service:audit-export`, which writes no audit records, among them): no key.
 *
 * A record no checkpoint covers is `unverified` (a log written before checkpoints, a producer
 * without a key, or one whose next checkpoint is not written yet); one covered only by
 * checkpoints whose key may not claim it, or whose signature fails, is `forbidden`. A checkpoint
 * signed by a key the keyring does not hold proves nothing either way (a retired key, or one of
 * the attacker's making): its records stay unverified. Everything here is pure (a function of
 * the records and the keyring), so the CLI and audit-export agree.
 */

/** The envelope tenant of every checkpoint: it covers records of any tenant, each judged by its own. */
export const CHECKPOINT_TENANT = '*';

/** The service signer that may speak for each `service:<name>` audit source. */
export const SERVICE_SOURCE_SIGNERS: Readonly<Record<string, Signer>> = Object.freeze({
  'service:approval': 'approval',
  'service:idempotency-ledger': 'ledger',
  'service:policy': 'policy',
});

/** What a producer passes to `auditCheckpoint`. */
export interface CheckpointInput {
  /** The envelope source of the records covered (and of the checkpoint). */
  readonly source: string;
  /** The producer's stream id (`chain.producer` of its records when chained). */
  readonly producer: string;
  /** `eventDigest` of each record covered, in write order (1 to `MAX_CHECKPOINT_DIGESTS`). */
  readonly digests: readonly string[];
  readonly lastSeq?: number;
}

/** A signed checkpoint over `input.digests`: what a producer appends to the audit topic. */
export function auditCheckpoint(input: CheckpointInput, key: SigningKey | AgentKey): AuditChainCheckpoint {
  const event = createEvent(
    AuditChainCheckpointV1,
    { source: input.source, tenant: CHECKPOINT_TENANT, subject: input.producer },
    { producer: input.producer, digests: [...input.digests], ...(input.lastSeq !== undefined && { lastSeq: input.lastSeq }) },
  );
  return signEvent(event, key);
}

/** Why a checkpoint's signature does not count. */
export type UntrustedCheckpointReason = 'unsigned' | 'malformed-signature' | 'unknown-key' | 'bad-signature';

export type CheckpointCheck =
  | { readonly trusted: true; readonly key: TrustedKey }
  | { readonly trusted: false; readonly reason: UntrustedCheckpointReason; readonly keyId?: string };

const checked = new WeakMap<object, WeakMap<Keyring, CheckpointCheck>>();

/** Whether a trusted key signed `checkpoint` (cached per event object and keyring: one verification each). */
export function checkCheckpoint(checkpoint: { signature?: unknown }, keyring: Keyring): CheckpointCheck {
  const known = checked.get(checkpoint)?.get(keyring);
  if (known) return known;
  const answer = verifyCheckpoint(checkpoint, keyring);
  let byKeyring = checked.get(checkpoint);
  if (!byKeyring) checked.set(checkpoint, (byKeyring = new WeakMap()));
  byKeyring.set(keyring, answer);
  return answer;
}

function verifyCheckpoint(checkpoint: { signature?: unknown }, keyring: Keyring): CheckpointCheck {
  if (checkpoint.signature === undefined) return { trusted: false, reason: 'unsigned' };
  const signature = EventSignatureSchema.safeParse(checkpoint.signature);
  if (!signature.success) return { trusted: false, reason: 'malformed-signature' };
  const { keyId, value } = signature.data;
  const key = keyring.keys.get(keyId);
  if (!key) return { trusted: false, reason: 'unknown-key', keyId };
  const ok = verify(null, signedBytes(checkpoint), key.publicKey, Buffer.from(value, 'base64url'));
  return ok ? { trusted: true, key } : { trusted: false, reason: 'bad-signature', keyId };
}

/** Whether `key` may speak for `source` at all (any tenant). */
export function maySpeakFor(key: TrustedKey, source: string): boolean {
  if (source.startsWith('service:')) return SERVICE_SOURCE_SIGNERS[source] === key.signer;
  if (source.startsWith('guard:')) return key.signer === 'agent';
  return false;
}

/** Why a trusted key may not vouch for a record. */
export type VouchRefusal = 'forbidden-source' | 'forbidden-tenant';

/** Whether `key` may vouch for a record of `source` in `tenant`; undefined when it may. */
export function vouchRefusal(key: TrustedKey, record: { readonly source: string; readonly tenant: string }): VouchRefusal | undefined {
  if (!maySpeakFor(key, record.source)) return 'forbidden-source';
  // An agent key bound to globex vouches for nothing in acme.
  if (key.signer === 'agent' && !(key.agent?.tenants.includes(record.tenant) ?? false)) return 'forbidden-tenant';
  return undefined;
}

/** A checkpoint that lists a record's digest, as a verifier saw it. */
export interface CheckpointCover {
  /** The checkpoint's event id. */
  readonly checkpointId: string;
  /** The checkpoint's envelope source: a producer vouches only for records of its own source. */
  readonly source: string;
  readonly check: CheckpointCheck;
}

/** Why a covered record is not its source's. */
export type ForbiddenReason = VouchRefusal | 'untrusted-checkpoint';

export type SourceVerdict =
  | { readonly status: 'verified'; readonly keyId: string; readonly checkpointId: string }
  | { readonly status: 'unverified' }
  | { readonly status: 'forbidden'; readonly reason: ForbiddenReason; readonly keyId?: string; readonly checkpointId: string };

/**
 * The verdict on one record from every checkpoint that lists its digest: verified when any of
 * them is trusted, of the record's source, and signed by a key that may vouch for it (so a forged
 * checkpoint listing an honest record's digest cannot take its verdict away); else forbidden
 * (the first refusal; a checkpoint of an unknown key refuses nothing); else unverified.
 */
export function judgeAuditRecord(record: { readonly source: string; readonly tenant: string }, covers: readonly CheckpointCover[]): SourceVerdict {
  let refused: Extract<SourceVerdict, { status: 'forbidden' }> | undefined;
  for (const cover of covers) {
    const { check } = cover;
    if (!check.trusted) {
      if (check.reason === 'unknown-key') continue;
      refused ??= { status: 'forbidden', reason: 'untrusted-checkpoint', checkpointId: cover.checkpointId, ...(check.keyId !== undefined && { keyId: check.keyId }) };
      continue;
    }
    const refusal = cover.source === record.source ? vouchRefusal(check.key, record) : 'forbidden-source';
    if (refusal === undefined) return { status: 'verified', keyId: check.key.keyId, checkpointId: cover.checkpointId };
    refused ??= { status: 'forbidden', reason: refusal, keyId: check.key.keyId, checkpointId: cover.checkpointId };
  }
  return refused ?? { status: 'unverified' };
}

/** One finding of `verifyAuditSources`; `position` is where it was read (topic/partition/offset or file:line). */
export type SourceFinding =
  | {
      readonly kind: 'forbidden';
      readonly id: string;
      readonly source: string;
      readonly tenant: string;
      readonly reason: ForbiddenReason;
      readonly keyId?: string;
      readonly checkpoint: string;
      readonly position: string;
    }
  | { readonly kind: 'untrusted-checkpoint'; readonly id: string; readonly source: string; readonly reason: UntrustedCheckpointReason; readonly keyId?: string; readonly position: string }
  | { readonly kind: 'forbidden-checkpoint'; readonly id: string; readonly source: string; readonly keyId: string; readonly position: string }
  | { readonly kind: 'malformed-checkpoint'; readonly id: string; readonly position: string };

export interface SourceReport {
  /** No finding: nothing forbidden, every checkpoint well-formed and signed by a key that may speak for its source. */
  readonly ok: boolean;
  /** Decisions read (checkpoints are counted apart). */
  readonly records: number;
  readonly verified: number;
  readonly unverified: number;
  readonly forbidden: number;
  readonly checkpoints: number;
  /** Digests trusted checkpoints list that no record read matches (expired by retention, or removed by an operator). */
  readonly missing: number;
  /** Checkpoints signed by keys the keyring does not hold (retired, or never trusted): they vouch for nothing and refuse nothing. */
  readonly unknownKeyCheckpoints: number;
  /** Unverified records per source and tenant (an old log has many: grouped, not listed one by one). */
  readonly unverifiedSources: readonly { readonly source: string; readonly tenant: string; readonly records: number; readonly first: string }[];
  readonly findings: readonly SourceFinding[];
}

interface ReadDecision {
  readonly id: string;
  readonly source: string;
  readonly tenant: string;
  readonly digest: string;
  readonly position: string;
}

function field(event: Record<string, unknown>, name: string): string {
  const value = event[name];
  return typeof value === 'string' ? value : '';
}

/** Reads one checkpoint: its covers go into `covers`, its findings into `findings`; returns the digests a key that may speak for it vouches for. */
function readCheckpoint(event: Record<string, unknown>, position: string, keyring: Keyring, covers: Map<string, CheckpointCover[]>, findings: SourceFinding[]): readonly string[] | 'unknown-key' {
  const id = field(event, 'id');
  const parsed = AuditChainCheckpointV1.safeParse(event);
  if (!parsed.success) {
    findings.push({ kind: 'malformed-checkpoint', id, position });
    return [];
  }
  // The signature is checked over the record as read: what its producer signed.
  const check = checkCheckpoint(event, keyring);
  const source = parsed.data.source;
  for (const digest of parsed.data.payload.digests) {
    const list = covers.get(digest) ?? [];
    list.push({ checkpointId: id, source, check });
    covers.set(digest, list);
  }
  if (!check.trusted && check.reason === 'unknown-key') return 'unknown-key';
  if (!check.trusted) {
    findings.push({ kind: 'untrusted-checkpoint', id, source, reason: check.reason, ...(check.keyId !== undefined && { keyId: check.keyId }), position });
    return [];
  }
  if (!maySpeakFor(check.key, source)) {
    findings.push({ kind: 'forbidden-checkpoint', id, source, keyId: check.key.keyId, position });
    return [];
  }
  return parsed.data.payload.digests;
}

/**
 * Judges every decision of an audit log by the checkpoints in it (read in any order): which are
 * verified for their source and tenant, which no checkpoint covers, which only checkpoints that
 * may not claim them cover. Records that fail their contract are judged too (their digest is
 * over the record as read). What `gatehouse audit verify` reports next to the hash chain.
 */
export function verifyAuditSources(records: Iterable<{ readonly event: unknown; readonly position: string }>, keyring: Keyring): SourceReport {
  const decisions: ReadDecision[] = [];
  const covers = new Map<string, CheckpointCover[]>();
  const findings: SourceFinding[] = [];
  const vouched = new Set<string>();
  let checkpoints = 0;
  let unknownKeyCheckpoints = 0;
  for (const { event, position } of records) {
    if (typeof event !== 'object' || event === null || Array.isArray(event)) continue;
    const raw = event as Record<string, unknown>;
    if (raw['type'] === 'AuditChainCheckpoint') {
      checkpoints += 1;
      const digests = readCheckpoint(raw, position, keyring, covers, findings);
      if (digests === 'unknown-key') unknownKeyCheckpoints += 1;
      else for (const digest of digests) vouched.add(digest);
    } else if (raw['type'] === 'DecisionRecorded') {
      decisions.push({ id: field(raw, 'id'), source: field(raw, 'source'), tenant: field(raw, 'tenant'), digest: eventDigest(raw), position });
    }
  }
  let verified = 0;
  let forbidden = 0;
  const unverified = new Map<string, { source: string; tenant: string; records: number; first: string }>();
  for (const decision of decisions) {
    vouched.delete(decision.digest);
    const verdict = judgeAuditRecord(decision, covers.get(decision.digest) ?? []);
    if (verdict.status === 'verified') {
      verified += 1;
    } else if (verdict.status === 'forbidden') {
      forbidden += 1;
      const { id, source, tenant, position } = decision;
      findings.push({ kind: 'forbidden', id, source, tenant, reason: verdict.reason, ...(verdict.keyId !== undefined && { keyId: verdict.keyId }), checkpoint: verdict.checkpointId, position });
    } else {
      const group = `${decision.source}\u0000${decision.tenant}`;
      const seen = unverified.get(group) ?? { source: decision.source, tenant: decision.tenant, records: 0, first: decision.position };
      seen.records += 1;
      unverified.set(group, seen);
    }
  }
  const unverifiedSources = [...unverified.values()];
  return Object.freeze({
    ok: findings.length === 0,
    records: decisions.length,
    verified,
    unverified: unverifiedSources.reduce((n, g) => n + g.records, 0),
    forbidden,
    checkpoints,
    missing: vouched.size,
    unknownKeyCheckpoints,
    unverifiedSources,
    findings,
  });
}
