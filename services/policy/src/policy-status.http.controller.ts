import { Controller, Get, Inject } from '@nestjs/common';
import { type PolicyEngine } from './engine/policy-engine.js';
import { POLICY_ENGINE } from './tokens.js';

/** `GET /v1/policy-status`: the fold's phase, offsets and counts (no bundle content). */
@Controller('v1/policy-status')
export class PolicyStatusController {
  constructor(@Inject(POLICY_ENGINE) private readonly engine: PolicyEngine) {}

  @Get()
  status(): ReturnType<PolicyEngine['status']> {
    return this.engine.status();
  }
}
