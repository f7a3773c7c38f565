// Verdicts as recorded steps (Duraton's semantics). A decision is recorded under what it was about
// before anything acts on it, and a resumed run (the same run id) reads it back instead of asking
// the guardrails again, so a re-run cannot disagree with the original and a guardrail that calls
// out (a classifier) is not called twice for one step. The binding is the whole of what the verdict
// was about: another input, tool schema, guardrail list, tenant, agent, placement or step is judged
// again; an old allow is never handed to a different question.
import { createHash } from 'node:crypto';
import { canonicalJson, freezeJson, type JsonValue, readOptions } from '@gatehouse/contracts';
import { failedDecision, type GuardrailDecision, type GuardrailFault, screenRecordedVerdict, validateVerdict } from './run-guardrails.js';
import { type Guardrail, type GuardrailInput, type GuardrailPlacement } from './types.js';

/**
 * The port: a store of recorded decisions by id, where the first write wins. Implementations hold
 * JSON only; what an entry means, and whether it still answers the question, is decided here.
 */
export interface VerdictJournal {
  /** The entry recorded under `id`, or undefined when there is none. */
  read(id: string): Promise<JsonValue | undefined>;
  /** Records `entry` under `id` unless one is there already; answers the entry that stands. */
  record(id: string, entry: JsonValue): Promise<JsonValue>;
}

/** What one recorded verdict answers: the run, where in it, and what was judged. */
export interface VerdictBinding {
  readonly runId: string;
  readonly tenant?: string;
  readonly agentId?: string;
  readonly placement: GuardrailPlacement;
  /** The step within the run: a tool call id, or a check's name and stage. */
  readonly step: string;
  /** The value judged, with the tool (id and input schema) it was judged for. */
  readonly value: JsonValue;
  readonly tool?: GuardrailInput['tool'];
}

/** A decision and whether it was read back from the journal rather than judged now. */
export interface JournaledDecision {
  readonly decision: GuardrailDecision;
  readonly replayed: boolean;
}

const ENTRY_VERSION = 1;
const FAULTS: ReadonlySet<string> = new Set<GuardrailFault>(['threw', 'invalid-verdict', 'timeout', 'failed']);
const JOURNAL_BY = 'journal';

const sha256 = (text: string): string => createHash('sha256').update(text).digest('hex');

/**
 * The key fields an entry is stored and checked under: the value and tool enter only as a digest,
 * so the key (and the id made from it) names nothing of the content.
 */
function keyOf(binding: VerdictBinding, guardrails: readonly string[]): { readonly id: string; readonly key: JsonValue } {
  const digest = sha256(canonicalJson({ value: binding.value, tool: binding.tool ?? null }));
  const key: JsonValue = {
    runId: binding.runId,
    tenant: binding.tenant ?? null,
    agentId: binding.agentId ?? null,
    placement: binding.placement,
    step: binding.step,
    guardrails: [...guardrails],
    digest,
  };
  return { id: sha256(canonicalJson(key)), key };
}

function entryOf(key: JsonValue, decision: GuardrailDecision): JsonValue {
  const { verdict, by, ran, fault } = decision;
  return {
    v: ENTRY_VERSION,
    key,
    decision: { verdict: JSON.parse(JSON.stringify(verdict)) as JsonValue, by: by ?? null, ran: [...ran], ...(fault ? { fault } : {}) },
  };
}

/**
 * The decision an entry records, when it is a well-formed entry for exactly this key and names only
 * guardrails of the binding; its detections screened again against their declarations (a store
 * written behind the journal's back cannot put content into a record). Undefined otherwise.
 */
function decisionOf(entry: unknown, key: JsonValue, guardrails: readonly Guardrail[]): GuardrailDecision | undefined {
  if (entry === null || typeof entry !== 'object' || Array.isArray(entry)) return undefined;
  const { v, key: recordedKey, decision } = entry as { v?: unknown; key?: unknown; decision?: unknown };
  if (v !== ENTRY_VERSION || canonicalJson(recordedKey) !== canonicalJson(key)) return undefined;
  if (decision === null || typeof decision !== 'object' || Array.isArray(decision)) return undefined;
  const { verdict: raw, by, ran, fault } = decision as Record<string, unknown>;
  const names = new Set(guardrails.map((g) => g.name));
  if (by !== null && (typeof by !== 'string' || !names.has(by))) return undefined;
  if (!Array.isArray(ran) || !ran.every((n) => typeof n === 'string' && names.has(n))) return undefined;
  if (fault !== undefined && (typeof fault !== 'string' || !FAULTS.has(fault))) return undefined;
  const verdict = validateVerdict(raw);
  if (!verdict) return undefined;
  const decider = typeof by === 'string' ? guardrails.find((g) => g.name === by) : undefined;
  return Object.freeze({
    verdict: screenRecordedVerdict(verdict, decider ? [decider] : guardrails),
    by: typeof by === 'string' ? by : undefined,
    ran: Object.freeze([...(ran as string[])]),
    ...(fault === undefined ? {} : { fault: fault as GuardrailFault }),
  });
}

/**
 * Judges once per binding: reads the recorded decision back when there is one for exactly this
 * binding, else runs `judge` and records its decision before returning it (the first recorded
 * decision stands when two writers race). A journal that cannot be read or written, or holds an
 * entry under this key that is not one, decides deny with outcome `failed`: nothing acts on a
 * verdict that is not on the record. Without a journal or a binding, `judge` simply runs.
 */
export async function judgeOnce(
  journal: VerdictJournal | undefined,
  binding: VerdictBinding | undefined,
  guardrails: readonly Guardrail[],
  judge: () => Promise<GuardrailDecision>,
): Promise<JournaledDecision> {
  const applying = binding === undefined ? [] : guardrails.filter((g) => g.placements.includes(binding.placement));
  if (journal === undefined || binding === undefined || applying.length === 0) return { decision: await judge(), replayed: false };
  const { id, key } = keyOf(binding, applying.map((g) => g.name));
  const unavailable = (): JournaledDecision => ({ decision: failedDecision('guardrail.journal-unavailable', JOURNAL_BY), replayed: false });
  let found: JsonValue | undefined;
  try {
    found = await journal.read(id);
  } catch {
    return unavailable();
  }
  if (found !== undefined) {
    const recorded = decisionOf(found, key, applying);
    return recorded ? { decision: recorded, replayed: true } : unavailable();
  }
  const decision = await judge();
  const entry = entryOf(key, decision);
  let standing: JsonValue;
  try {
    standing = await journal.record(id, entry);
  } catch {
    return unavailable();
  }
  const stands = decisionOf(standing, key, applying);
  if (!stands) return unavailable();
  // Another writer recorded first: its decision is the one on the record, and the one that acts.
  return { decision: stands, replayed: canonicalJson(standing) !== canonicalJson(entry) };
}

/** Throws a TypeError unless `journal` implements the port. */
export function validateJournal(journal: unknown, where: string): VerdictJournal {
  const candidate = journal as Partial<VerdictJournal> | null;
  if (candidate === null || typeof candidate !== 'object' || typeof candidate.read !== 'function' || typeof candidate.record !== 'function') {
    throw new TypeError(`${where}: verdict journal must have read and record functions`);
  }
  return candidate as VerdictJournal;
}

export interface InMemoryVerdictJournalOptions {
  /** Entries kept, oldest forgotten first (a forgotten step is judged again); default 10,000. */
  readonly maxEntries?: number;
}

/**
 * A journal in this process's memory: for tests and for runs that resume in the same process. Its
 * reach is the process: a crash loses it, and a resumed run is judged again.
 */
export function createInMemoryVerdictJournal(options: InMemoryVerdictJournalOptions = {}): VerdictJournal {
  readOptions('createInMemoryVerdictJournal', options, ['maxEntries']);
  const maxEntries = options.maxEntries ?? 10_000;
  if (!Number.isSafeInteger(maxEntries) || maxEntries < 1) throw new TypeError('createInMemoryVerdictJournal: maxEntries must be a positive integer');
  const entries = new Map<string, JsonValue>();
  return Object.freeze({
    async read(id: string): Promise<JsonValue | undefined> {
      return entries.get(id);
    },
    async record(id: string, entry: JsonValue): Promise<JsonValue> {
      const found = entries.get(id);
      if (found !== undefined) return found;
      const frozen = freezeJson(entry);
      entries.set(id, frozen);
      if (entries.size > maxEntries) entries.delete(entries.keys().next().value as string);
      return frozen;
    },
  });
}
