import { Body, Controller, HttpCode, Post } from '@nestjs/common';

/**
 * The transport alone: the same HTTP stack, JSON parsing and filters as the ledger routes,
 * and no ledger work. Benchmarks print the ledger's latency beside this round trip.
 */
@Controller('v1/ledger/echo')
export class EchoController {
  @Post()
  @HttpCode(200)
  echo(@Body() body: unknown): { ok: true; bytes: number } {
    return { ok: true, bytes: JSON.stringify(body ?? null).length };
  }
}
