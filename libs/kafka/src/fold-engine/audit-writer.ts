import { type AgentKey, isDecisionRecorded, type SigningKey, type TopicEvent } from '@gatehouse/contracts';
import { AuditCheckpointer } from '../audit-checkpoints.js';
import { type AppendResult, type EventProducer } from '../producer.js';
import { type FoldLog } from './fold-engine.js';
import { type AuditAppender } from './fold-reader.js';
import { countDecision } from '../telemetry/kafka-telemetry.js';

/**
 * An engine's audit records (its security reports, `publishTo('audit', …)`): appended with the
 * engine's producer, and, with the service's key, covered by a signed checkpoint of their source
 * (`AuditChainCheckpointV1`), so verifiers count them as the service's; without a key they read as
 * unverified. One checkpointer per source the engine writes (a service writes one).
 */
export class EngineAuditWriter implements AuditAppender {
  private readonly checkpointers = new Map<string, AuditCheckpointer>();

  constructor(
    private readonly producer: () => EventProducer | undefined,
    private readonly unavailable: () => Error,
    private readonly key: SigningKey | AgentKey | undefined,
    private readonly log: FoldLog,
  ) {}

  /** Appends an audit record; once acknowledged, the next checkpoint of its source covers it. */
  async publish(_topicId: 'audit', event: TopicEvent<'audit'>): Promise<AppendResult> {
    const producer = this.producer();
    if (!producer) throw this.unavailable();
    const appended = await producer.publish('audit', event);
    if (isDecisionRecorded(event)) {
      countDecision(event);
      this.checkpointerOf(event.source)?.covered(event);
    }
    return appended;
  }

  private checkpointerOf(source: string): AuditCheckpointer | undefined {
    if (!this.key) return undefined;
    let checkpointer = this.checkpointers.get(source);
    if (!checkpointer) {
      checkpointer = new AuditCheckpointer({
        key: this.key,
        source,
        append: (checkpoint) => {
          const producer = this.producer();
          return producer ? producer.publish('audit', checkpoint) : Promise.reject(this.unavailable());
        },
        onError: () => this.log('warn', 'could not append an audit checkpoint; its records go into the next', { code: 'AUDIT.CHECKPOINT_FAILED' }),
      });
      this.checkpointers.set(source, checkpointer);
    }
    return checkpointer;
  }

  /** The last checkpoints, so every record appended is covered. */
  async close(): Promise<void> {
    for (const checkpointer of this.checkpointers.values()) await checkpointer.close().catch(() => undefined);
  }
}
