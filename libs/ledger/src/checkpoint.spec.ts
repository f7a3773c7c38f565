// Issue 17: the ledger topic deletes records by time, and a fold of what remains starts from the
// checkpoints the service wrote into each partition. For random ledger logs over three partitions,
// with checkpoints written at random moments (other writers' records landing between the cut and
// the checkpoint, writers killed half-way through a checkpoint, forged checkpoints), and every
// partition's beginning deleted up to a random offset: wherever a complete checkpoint covers what
// was deleted, its state plus the fold of the records after its cut equals the fold of the whole
// log; where none does, the start is refused, never folded.
import { describe, expect, it } from '@jest/globals';
import { createHash, randomUUID } from 'node:crypto';
import {
  createEvent,
  LedgerKeyCompletedV1,
  LedgerKeyExpiredV1,
  LedgerKeyFailedV1,
  LedgerKeyReconciledV1,
  LedgerKeyReservedV1,
  LedgerKeyResolvedV1,
  LedgerKeyTakenOverV1,
  LedgerRateConsumedV1,
  signEvent,
} from '@gatehouse/contracts';
import { type Random, seeded, TEST_KEYRING, TEST_KEYS, testSigningKey } from '@gatehouse/contracts/testing';
import { CheckpointCollector, checkpointEvents, checkpointSubject, ledgerPartitionText, restoreLedgerCheckpoints, splitByPartition } from './checkpoint.js';
import { applyLedgerEvent, type LedgerEvent } from './fold.js';
import { createLedgerState, type LedgerState } from './state.js';

const RUNS = Number(process.env['GATEHOUSE_SNAPSHOT_RUNS'] ?? 60);
const PARTITIONS = 3;
const FOLD = 'ledger@test';
const TOPIC = 'it.gatehouse.ledger.v1';
const WHERE = { topic: TOPIC, partitions: PARTITIONS, fold: FOLD };
const FORGER = testSigningKey('ledger');
const hex = (s: string) => createHash('sha256').update(s).digest('hex');
const partitionOf = (key: string) => createHash('sha256').update(key).digest()[0]! % PARTITIONS;
const meta = (subject: string) => ({ source: 'service:idempotency-ledger', tenant: 'acme', subject });

interface Entry {
  readonly event: LedgerEvent;
  readonly logTime: number;
  readonly partition: number;
  readonly offset: bigint;
}

/** One random ledger outcome (as the service would sign it; the caller signs). */
function randomOutcome(random: Random, leases: string[], now: number, i: number): LedgerEvent {
  const pick = <T>(items: readonly T[]): T => items[Math.floor(random() * items.length)] as T;
  const key = hex(`key-${Math.floor(random() * 8)}`);
  const budgetKey = hex(`budget-${Math.floor(random() * 3)}`);
  const lease = random() < 0.5 ? pick(leases) : randomUUID();
  leases.push(lease);
  const principal = random() < 0.7 ? { principal: pick(['agent:billing', 'agent:support']) } : {};
  const roll = random();
  if (roll < 0.2) return createEvent(LedgerKeyReservedV1, meta(key), { key, connectorId: 'payments.refund', leaseToken: lease, holder: 'h', pendingTtlMs: 1 + Math.floor(random() * 4_000), ...principal });
  if (roll < 0.32) return createEvent(LedgerKeyCompletedV1, meta(key), { key, leaseToken: lease, ...(random() < 0.8 && { result: { refund: `r-${i}` } }) });
  if (roll < 0.4) return createEvent(LedgerKeyFailedV1, meta(key), { key, leaseToken: lease, code: 'X', retryable: random() < 0.5 });
  if (roll < 0.5) return createEvent(LedgerKeyTakenOverV1, meta(key), { key, previousLeaseToken: pick(leases), leaseToken: randomUUID(), holder: 'h2', pendingTtlMs: 1 + Math.floor(random() * 4_000), ...principal });
  if (roll < 0.56) return createEvent(LedgerKeyReconciledV1, meta(key), { key, leaseToken: lease, outcome: pick(['already-applied', 'not-applied'] as const) });
  if (roll < 0.62) return createEvent(LedgerKeyResolvedV1, meta(key), { key, decision: pick(['re-execute', 'mark-completed'] as const), operator: { id: 'op:1', role: 'operator' } });
  if (roll < 0.68) return createEvent(LedgerKeyExpiredV1, meta(key), { key, before: now - Math.floor(random() * 10_000) });
  return createEvent(LedgerRateConsumedV1, meta(budgetKey), { budgetKey, claimId: randomUUID(), algorithm: pick(['fixed-window', 'sliding-window'] as const), count: 1 + Math.floor(random() * 3), windowMs: 1 + Math.floor(random() * 8_000), ...principal });
}

/**
 * A random log over PARTITIONS partitions, in append order, with the service's checkpoints in it:
 * the state is read at a cut, and the chunks land later, after other writers' records.
 */
function randomLog(random: Random, length: number): Entry[] {
  const log: Entry[] = [];
  const next = Array.from({ length: PARTITIONS }, () => 0n);
  const state = createLedgerState(TEST_KEYRING);
  const leases = [randomUUID()];
  let now = Date.parse('2030-01-01T00:00:00.000Z');
  const append = (event: LedgerEvent, partition = partitionOf(event.subject)) => {
    applyLedgerEvent(state, event, now);
    log.push({ event, logTime: now, partition, offset: next[partition]! });
    next[partition]! += 1n;
  };
  /** Checkpoints taken but not yet (wholly) appended: their chunks, still to land. */
  const writing: LedgerEvent[][] = [];
  for (let i = 0; i < length; i += 1) {
    now += Math.floor(random() ** 2 * 5_000);
    const roll = random();
    if (roll < 0.08) {
      // The service reads every partition's state at the offsets it has applied, and writes later.
      for (let partition = 0; partition < PARTITIONS; partition += 1) {
        const forged = random() < 0.05;
        const events = checkpointEvents({ state: forged ? createLedgerState(TEST_KEYRING) : state, topic: TOPIC, partition, partitions: PARTITIONS, cut: next[partition]!, fold: FOLD, partitionOf, meta: meta(checkpointSubject(partition, partitionOf)), chunkChars: 600 });
        const signed = events.map((e) => signEvent(e, forged ? FORGER : TEST_KEYS.ledger));
        // A writer killed part-way leaves a torn checkpoint.
        writing.push(random() < 0.15 ? signed.slice(0, Math.max(0, signed.length - 1)) : signed);
      }
    } else if (roll < 0.35 && writing.length > 0) {
      const chunks = writing[0]!;
      const chunk = chunks.shift();
      if (chunk) append(chunk);
      if (chunks.length === 0) writing.shift();
    } else {
      append(signEvent(randomOutcome(random, leases, now, i), random() < 0.05 ? FORGER : TEST_KEYS.ledger));
    }
  }
  return log;
}

const sorted = <V>(map: ReadonlyMap<string, V>) => [...map].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
const comparable = (state: LedgerState) => ({
  keys: sorted(state.keys),
  budgets: sorted(state.budgets),
  openKeysByPrincipal: sorted(state.openKeysByPrincipal),
  budgetsByPrincipal: sorted(state.budgetsByPrincipal),
});

/** The start over `log` with each partition's records below `lows` deleted: the state, or 'lost' when a partition lost records no checkpoint covers. */
function startOverWhatRemains(log: readonly Entry[], lows: readonly bigint[]): LedgerState | 'lost' {
  const remaining = log.filter((e) => e.offset >= lows[e.partition]!);
  const collector = new CheckpointCollector(TEST_KEYRING, WHERE);
  for (const entry of remaining) collector.offer(entry.partition, entry.event);
  const cuts: bigint[] = [];
  const texts: string[] = [];
  for (let partition = 0; partition < PARTITIONS; partition += 1) {
    const found = collector.latest(partition, lows[partition]!);
    if (!found && lows[partition]! > 0n) return 'lost';
    cuts.push(found?.cut ?? 0n);
    if (found) texts.push(found.text);
  }
  const state = restoreLedgerCheckpoints(TEST_KEYRING, texts);
  for (const entry of remaining) if (entry.offset >= cuts[entry.partition]!) applyLedgerEvent(state, entry.event, entry.logTime);
  return state;
}

describe('the ledger fold from checkpoints in its log', () => {
  it(`reaches the state of the whole log from what remains after any deletion a checkpoint covers (${RUNS} random logs)`, () => {
    const random = seeded(Number(process.env['GATEHOUSE_FUZZ_SEED'] ?? 17));
    let restored = 0;
    let refused = 0;
    for (let run = 0; run < RUNS; run += 1) {
      const log = randomLog(random, 40 + Math.floor(random() * 120));
      const whole = createLedgerState(TEST_KEYRING);
      for (const { event, logTime } of log) applyLedgerEvent(whole, event, logTime);
      const lengths = Array.from({ length: PARTITIONS }, (_, p) => BigInt(log.filter((e) => e.partition === p).length));
      for (let trial = 0; trial < 8; trial += 1) {
        const lows = lengths.map((n) => BigInt(Math.floor(random() ** 2 * (Number(n) + 1))));
        const start = startOverWhatRemains(log, lows);
        if (start === 'lost') {
          refused += 1;
          continue;
        }
        restored += 1;
        expect({ run, lows: lows.map(String), ...comparable(start) }).toEqual({ run, lows: lows.map(String), ...comparable(whole) });
      }
      // Nothing deleted: the fold from offset 0 needs no checkpoint.
      expect(startOverWhatRemains(log, [0n, 0n, 0n])).not.toBe('lost');
    }
    // Both outcomes must be reached, each many times.
    expect(restored).toBeGreaterThan(RUNS * 2);
    expect(refused).toBeGreaterThan(RUNS);
  });

  it('never counts a forged, torn, misplaced, copied or other-version checkpoint', () => {
    const state = createLedgerState(TEST_KEYRING);
    const key = hex('k');
    applyLedgerEvent(state, signEvent(createEvent(LedgerKeyReservedV1, meta(key), { key, connectorId: 'c', leaseToken: randomUUID(), holder: 'h', pendingTtlMs: 1_000 }), TEST_KEYS.ledger), 1);
    const partition = partitionOf(key);
    const subject = checkpointSubject(partition, partitionOf);
    const events = (fold = FOLD, at = partition, topic = TOPIC) => checkpointEvents({ state, topic, partition: at, partitions: PARTITIONS, cut: 1n, fold, partitionOf, meta: meta(subject), chunkChars: 40 });
    const offerAll = (collector: CheckpointCollector, list: readonly LedgerEvent[], signer = TEST_KEYS.ledger, into = partition) => {
      for (const e of list) collector.offer(into, signEvent(e, signer));
    };
    const cases: [string, (c: CheckpointCollector) => void][] = [
      ['forged', (c) => offerAll(c, events(), FORGER)],
      ['torn', (c) => offerAll(c, events().slice(0, -1))],
      ['out of order', (c) => offerAll(c, [...events()].reverse())],
      ['in another partition', (c) => offerAll(c, events(), TEST_KEYS.ledger, (partition + 1) % PARTITIONS)],
      ['of another fold version', (c) => offerAll(c, events('ledger@0'))],
      ['copied from another topic', (c) => offerAll(c, events(FOLD, partition, 'staging.gatehouse.ledger.v1'))],
    ];
    expect(events().length).toBeGreaterThan(2);
    for (const [name, offer] of cases) {
      const collector = new CheckpointCollector(TEST_KEYRING, WHERE);
      offer(collector);
      expect({ name, found: collector.latest(partition, 0n) ?? collector.latest((partition + 1) % PARTITIONS, 0n) }).toEqual({ name, found: undefined });
    }
    const good = new CheckpointCollector(TEST_KEYRING, WHERE);
    offerAll(good, events());
    const found = good.latest(partition, 1n);
    expect(found?.text).toBe(ledgerPartitionText(state, partition, partitionOf));
    // Split once, each partition's entries alone give the same text.
    expect(ledgerPartitionText(splitByPartition(state, PARTITIONS, partitionOf)[partition]!, partition)).toBe(found?.text);
    expect(good.latest(partition, 2n)).toBeUndefined();
    expect(comparable(restoreLedgerCheckpoints(TEST_KEYRING, [found!.text]))).toEqual(comparable(state));
    expect(() => restoreLedgerCheckpoints(TEST_KEYRING, ['{"format":1,"keys":[["k",1]],"budgets":[]}'])).toThrow(TypeError);
  });

  it('the fold itself changes nothing on a checkpoint, and counts a forged one as untrusted', () => {
    const state = createLedgerState(TEST_KEYRING);
    const [event] = checkpointEvents({ state, topic: TOPIC, partition: 0, partitions: 1, cut: 0n, fold: FOLD, partitionOf: () => 0, meta: meta('ledger-checkpoint/0/0') });
    expect(applyLedgerEvent(state, signEvent(event!, TEST_KEYS.ledger), 1)).toEqual({ kind: 'accepted' });
    expect(applyLedgerEvent(state, signEvent(event!, FORGER), 1)).toEqual({ kind: 'rejected', reason: 'untrusted-signature' });
    expect(comparable(state)).toEqual(comparable(createLedgerState(TEST_KEYRING)));
    expect(state.untrusted.count).toBe(1);
  });
});
