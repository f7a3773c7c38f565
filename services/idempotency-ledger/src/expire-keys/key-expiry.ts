import { Inject, Injectable, Logger, type OnModuleDestroy, type OnModuleInit } from '@nestjs/common';
import { type LedgerEngine } from '../engine/ledger-engine.js';
import { type LedgerOptions } from '../ledger-config.js';
import { LEDGER_ENGINE, LEDGER_OPTIONS } from '../tokens.js';

/**
 * The ledger's retention, when configured (GATEHOUSE_LEDGER_RETAIN_COMPLETED_MS): every
 * `expirySweepMs` it asks the engine to expire completed keys past the retention, one sweep at a
 * time. Without a retention it does nothing.
 */
@Injectable()
export class KeyExpiry implements OnModuleInit, OnModuleDestroy {
  private timer: NodeJS.Timeout | undefined;
  private sweeping: Promise<unknown> | undefined;
  private readonly log = new Logger('ledger');

  constructor(
    @Inject(LEDGER_ENGINE) private readonly engine: LedgerEngine,
    @Inject(LEDGER_OPTIONS) private readonly options: LedgerOptions,
  ) {}

  onModuleInit(): void {
    const retainMs = this.options.retainCompletedMs;
    if (retainMs === undefined) return;
    this.timer = setInterval(() => {
      // A sweep that outlasts the interval is not doubled.
      // A failed sweep is retried by the next one; it never becomes an unhandled rejection.
      this.sweeping ??= this.engine
        .expireCompleted(retainMs)
        .catch(() => this.log.warn('a retention sweep failed; the next one retries'))
        .finally(() => (this.sweeping = undefined));
    }, this.options.expirySweepMs ?? 60_000);
    this.timer.unref();
  }

  async onModuleDestroy(): Promise<void> {
    clearInterval(this.timer);
    await this.sweeping;
  }
}
