// The durable verdict journal: the storage a Mastra user already has (`new Mastra({ storage })`),
// through its `threadState` domain, Mastra's generic durable per-thread state (one value per
// thread and type). With a durable adapter (@mastra/libsql, @mastra/pg ...) a recorded verdict
// survives the process, so a run resumed after a crash reads it back.
import { GatehouseError, type JsonValue, readOptions } from '@gatehouse/contracts';
import { type MastraCompositeStore } from '@mastra/core/storage';
import { type VerdictJournal } from './verdict-journal.js';

export interface MastraVerdictJournalOptions {
  /** A Mastra storage (`InMemoryStore`, `LibSQLStore`, `PostgresStore`, a composite ...) with a `threadState` domain. */
  readonly storage: Pick<MastraCompositeStore, 'getStore'>;
}

// Every verdict under one synthetic thread, one type per entry: no entry is rewritten to add another.
const THREAD_ID = 'gatehouse.guardrail-verdicts';
const typeOf = (id: string) => `verdict:${id}`;

interface ThreadStateDomain {
  getState(args: { threadId: string; type: string }): Promise<unknown>;
  setState(args: { threadId: string; type: string; value: unknown }): Promise<void>;
}

function unavailable(message: string): GatehouseError {
  return new GatehouseError('GUARDRAIL.JOURNAL_UNAVAILABLE', message, { category: 'unavailable', retryable: true });
}

/**
 * A verdict journal in a Mastra storage's `threadState` domain. The first entry recorded under an id
 * stands: a write reads first and is serialized per id within the process. Two processes resuming
 * the same run at the same moment may both write (the storage's last write stays); each acts on the
 * decision it read back, so the record never disagrees with what a process did afterwards.
 */
export function createMastraVerdictJournal(options: MastraVerdictJournalOptions): VerdictJournal {
  readOptions('createMastraVerdictJournal', options, ['storage']);
  const storage = options?.storage;
  if (storage === null || typeof storage !== 'object' || typeof storage.getStore !== 'function') {
    throw new TypeError('createMastraVerdictJournal: storage must be a Mastra storage');
  }
  let domain: Promise<ThreadStateDomain> | undefined;
  const store = (): Promise<ThreadStateDomain> => {
    domain ??= storage.getStore('threadState').then((found) => {
      const candidate = found as Partial<ThreadStateDomain> | undefined;
      if (!candidate || typeof candidate.getState !== 'function' || typeof candidate.setState !== 'function') throw unavailable('the Mastra storage has no threadState domain for guardrail verdicts');
      return candidate as ThreadStateDomain;
    });
    // A failed lookup is asked again next time, not remembered.
    domain.catch(() => {
      domain = undefined;
    });
    return domain;
  };
  const read = async (id: string): Promise<JsonValue | undefined> => {
    const value = await (await store()).getState({ threadId: THREAD_ID, type: typeOf(id) });
    return value === undefined || value === null ? undefined : (value as JsonValue);
  };
  const writing = new Map<string, Promise<JsonValue>>();
  return Object.freeze({
    read,
    record(id: string, entry: JsonValue): Promise<JsonValue> {
      const before = writing.get(id) ?? Promise.resolve(undefined);
      const next = before
        .catch(() => undefined)
        .then(async () => {
          const found = await read(id);
          if (found !== undefined) return found;
          await (await store()).setState({ threadId: THREAD_ID, type: typeOf(id), value: entry });
          // Read back: what acts is what the storage holds, and a write it did not keep is no record.
          const stored = await read(id);
          if (stored === undefined) throw unavailable('the guardrail verdict was not kept by the Mastra storage');
          return stored;
        });
      writing.set(id, next);
      void next.finally(() => {
        if (writing.get(id) === next) writing.delete(id);
      }).catch(() => undefined);
      return next;
    },
  });
}
