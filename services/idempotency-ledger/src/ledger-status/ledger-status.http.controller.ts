import { Controller, Get, Inject } from '@nestjs/common';
import { type LedgerEngine, type LedgerStatus } from '../engine/ledger-engine.js';
import { type CountedRefusal, type LedgerRefusals } from '../http/refusals.js';
import { LEDGER_ENGINE, LEDGER_REFUSALS } from '../tokens.js';

@Controller('v1/ledger/status')
export class LedgerStatusController {
  constructor(
    @Inject(LEDGER_ENGINE) private readonly engine: LedgerEngine,
    @Inject(LEDGER_REFUSALS) private readonly refusals: LedgerRefusals,
  ) {}

  /** Anyone: applied and projected offsets, key and budget counts, refusals by code (counts only: no key, tenant or caller). */
  @Get()
  status(): LedgerStatus & { readonly refusals: Record<CountedRefusal, number> } {
    return { ...this.engine.status(), refusals: this.refusals.snapshot() };
  }
}
