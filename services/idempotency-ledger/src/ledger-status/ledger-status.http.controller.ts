import { Controller, Get, Inject } from '@nestjs/common';
import { type LedgerEngine, type LedgerStatus } from '../engine/ledger-engine.js';
import { LEDGER_ENGINE } from '../tokens.js';

@Controller('v1/ledger/status')
export class LedgerStatusController {
  constructor(@Inject(LEDGER_ENGINE) private readonly engine: LedgerEngine) {}

  /** Applied and projected offsets, key and budget counts. */
  @Get()
  status(): LedgerStatus {
    return this.engine.status();
  }
}
