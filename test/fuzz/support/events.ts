import { createHash, randomUUID } from 'node:crypto';
import {
  ApprovalCancelledV1,
  ApprovalDecidedV1,
  ApprovalExpiredV1,
  ApprovalRequestedV1,
  createEvent,
  DecisionRecordedV1,
  LedgerKeyCompletedV1,
  LedgerKeyReservedV1,
  LedgerRateConsumedV1,
  PolicyBundlePublishedV1,
  signEvent,
  type SigningKey,
} from '@gatehouse/contracts';
import { TEST_KEYS, testSigningKey } from '@gatehouse/contracts/testing';
import fc from 'fast-check';

// Valid events of every topic, to break (poison) or to forge (granting events without a trusted
// signature). The forgeries are the ways a writer other than the owning service could try to
// grant: no signature, another service's key, a key nobody trusts under a made-up id, the
// owner's key id with a signature that does not match the event.

type Json = Record<string, unknown>;

const hex64 = (seed: string) => createHash('sha256').update(seed).digest('hex');
const asJson = (event: object): Json => JSON.parse(JSON.stringify(event)) as Json;

/** A key whose id nobody trusts, and one trusted for another signer: made once, signing is cheap, generating is not. */
const ROGUE = { approval: testSigningKey('approval', 'approval-rogue'), ledger: testSigningKey('ledger', 'ledger-rogue'), policy: testSigningKey('policy', 'policy-rogue') };

export type Forgery = 'unsigned' | 'wrong-signer' | 'unknown-key' | 'bad-signature';
const FORGERIES: readonly Forgery[] = ['unsigned', 'wrong-signer', 'unknown-key', 'bad-signature'];

/** `event` as a forger would write it. */
function forge(event: Json, signer: 'approval' | 'ledger' | 'policy', how: Forgery): Json {
  switch (how) {
    case 'unsigned':
      return event;
    case 'wrong-signer':
      return asJson(signEvent(event, signer === 'approval' ? TEST_KEYS.ledger : TEST_KEYS.approval));
    case 'unknown-key':
      return asJson(signEvent(event, ROGUE[signer]));
    case 'bad-signature': {
      // Signed under the owner's real key id by a key that is not the owner's.
      const imposter: SigningKey = { ...ROGUE[signer], keyId: TEST_KEYS[signer].keyId };
      return asJson(signEvent(event, imposter));
    }
    default: {
      const exhaustive: never = how;
      return exhaustive;
    }
  }
}

/** The approval id shape (`appr_` and 64 hex digits) for an id nobody requested. */
export const unknownApprovalId = fc.uint8Array({ minLength: 32, maxLength: 32 }).map((b) => `appr_${Buffer.from(b).toString('hex')}`);

const actor = { id: 'agent:refund-bot', role: 'agent', kind: 'agent' } as const;
const reviewer = { id: 'user:rita', role: 'payments-approver', kind: 'human' } as const;
const meta = (subject: string, source = 'guard:fuzz') => ({ source, tenant: 'acme', subject });

/** A valid approval request (its id is not derived from its scope, so every fold would reject it as a squatter). */
export function approvalRequested(approvalId: string): Json {
  return asJson(
    createEvent(ApprovalRequestedV1, meta(approvalId), {
      approvalId,
      scope: { tenant: 'acme', connectorId: 'payments.refund', executionId: `fuzz/${randomUUID()}`, argumentsHash: hex64(approvalId) },
      arguments: { orderId: 'o-1', amount: 40 },
      redactedPaths: [],
      requester: actor,
      reason: 'refunds need a person',
      deadline: new Date(Date.now() + 3_600_000).toISOString(),
    }),
  );
}

/** Valid events of the approvals topic (a decision signed by the real key among them). */
export function approvalBases(): Json[] {
  const id = `appr_${hex64('base')}`;
  return [
    approvalRequested(id),
    asJson(signEvent(createEvent(ApprovalDecidedV1, meta(id, 'service:approval'), { approvalId: id, verdict: 'approve', reviewer }), TEST_KEYS.approval)),
    asJson(createEvent(ApprovalCancelledV1, meta(id), { approvalId: id, by: actor, reason: 'run ended' })),
  ];
}

/** Forged decisions and expiries of `targets` (an id, or unknown ones). */
export function forgedApprovalGrants(targets: fc.Arbitrary<string>): fc.Arbitrary<Json> {
  return fc
    .record({ approvalId: targets, type: fc.constantFrom('decided', 'expired'), verdict: fc.constantFrom('approve', 'deny'), how: fc.constantFrom(...FORGERIES) })
    .map(({ approvalId, type, verdict, how }) => {
      const event =
        type === 'decided'
          ? createEvent(ApprovalDecidedV1, meta(approvalId, 'service:approval'), { approvalId, verdict, reviewer })
          : createEvent(ApprovalExpiredV1, meta(approvalId, 'service:approval'), { approvalId, deadline: new Date(0).toISOString() });
      return forge(asJson(event), 'approval', how);
    });
}

/** Decodable approval events every fold rejects and reports as forbidden claims: first-edition (unsigned) requests, unsigned cancellations. */
export function rejectedApprovalEvents(): fc.Arbitrary<Json> {
  return fc.oneof(
    unknownApprovalId.map(approvalRequested),
    unknownApprovalId.map((approvalId) => asJson(createEvent(ApprovalCancelledV1, meta(approvalId), { approvalId, by: actor, reason: 'withdrawn' }))),
  );
}

/** A valid decision of record (audit topic). */
export function decisionRecorded(overrides: { runId?: string; code?: string } = {}): Json {
  return asJson(
    createEvent(DecisionRecordedV1, { source: 'guard:fuzz', tenant: 'acme', subject: overrides.runId ?? 'run-fuzz' }, {
      decisionId: randomUUID(),
      boundary: 'tool',
      outcome: 'denied',
      code: overrides.code ?? 'POLICY.DENIED',
      reason: 'denied by policy',
      runId: overrides.runId ?? 'run-fuzz',
      agentId: 'refund-bot',
      redactedPaths: [],
    }),
  );
}

const ledgerMeta = (subject: string) => ({ source: 'service:idempotency-ledger', tenant: 'gatehouse', subject });

/** Valid ledger events, signed by the ledger's real key. */
export function ledgerBases(): Json[] {
  const key = hex64('ledger-base');
  const lease = randomUUID();
  return [
    asJson(signEvent(createEvent(LedgerKeyReservedV1, ledgerMeta(key), { key, connectorId: 'payments.refund', leaseToken: lease, holder: 'agent-1', pendingTtlMs: 30_000 }), TEST_KEYS.ledger)),
    asJson(signEvent(createEvent(LedgerKeyCompletedV1, ledgerMeta(key), { key, leaseToken: lease, result: { ok: true } }), TEST_KEYS.ledger)),
    asJson(signEvent(createEvent(LedgerRateConsumedV1, ledgerMeta(key), { budgetKey: key, claimId: randomUUID(), algorithm: 'fixed-window', count: 5, windowMs: 1_000 } as never), TEST_KEYS.ledger)),
  ];
}

/** Forged ledger grants: a reservation, completion or rate consumption of a fresh key, as a forger writes it. */
export function forgedLedgerGrants(): fc.Arbitrary<Json> {
  return fc
    .record({ seed: fc.uint8Array({ minLength: 8, maxLength: 8 }), type: fc.constantFrom('reserved', 'completed', 'rate'), how: fc.constantFrom(...FORGERIES) })
    .map(({ seed, type, how }) => {
      const key = hex64(Buffer.from(seed).toString('hex'));
      const lease = randomUUID();
      const event =
        type === 'reserved'
          ? createEvent(LedgerKeyReservedV1, ledgerMeta(key), { key, connectorId: 'payments.refund', leaseToken: lease, holder: 'forger', pendingTtlMs: 600_000 })
          : type === 'completed'
            ? createEvent(LedgerKeyCompletedV1, ledgerMeta(key), { key, leaseToken: lease, result: 'forged' })
            : createEvent(LedgerRateConsumedV1, ledgerMeta(key), { budgetKey: key, claimId: randomUUID(), algorithm: 'fixed-window', count: 1, windowMs: 60_000 } as never);
      return forge(asJson(event), 'ledger', how);
    });
}

/** A gatekeeper bundle of `policySetId` with one rule. */
export function bundleOf(policySetId: string, maxAmount: number): Json {
  return {
    policySetId,
    policies: [{ id: 'refund-limit', version: '1', priority: 10, match: { tools: ['payments.refund'] }, rules: { denyWhen: `input.amount > ${maxAmount}` } }],
  };
}

const policyMeta = (subject: string) => ({ source: 'service:policy', tenant: 'gatehouse', subject });

/** Valid policy publications, signed by the policy service's real key. */
export function policyBases(policySetId: string): Json[] {
  return [
    asJson(
      signEvent(
        createEvent(PolicyBundlePublishedV1, policyMeta(`${policySetId}@9`), { policySetId, revision: 9, digest: hex64('bundle'), publishedBy: 'op:fuzz', bundle: bundleOf(policySetId, 1) as never }),
        TEST_KEYS.policy,
      ),
    ),
  ];
}

/** Forged publications of `policySetId` at revisions the service never wrote. */
export function forgedPolicyGrants(policySetId: string): fc.Arbitrary<Json> {
  return fc.record({ revision: fc.integer({ min: 1, max: 1_000_000 }), how: fc.constantFrom(...FORGERIES), open: fc.boolean() }).map(({ revision, how, open }) => {
    // An "allow everything" bundle: what a forger would want the guards to load.
    const bundle = open ? { policySetId, policies: [{ id: 'open', version: '1', priority: 1_000_000, match: { tools: ['*'] }, rules: { allowWhen: 'true' } }] } : bundleOf(policySetId, 1_000_000);
    const event = createEvent(PolicyBundlePublishedV1, policyMeta(`${policySetId}@${revision}`), { policySetId, revision, digest: hex64(`forged-${revision}`), publishedBy: 'op:forger', bundle: bundle as never });
    return forge(asJson(event), 'policy', how);
  });
}
