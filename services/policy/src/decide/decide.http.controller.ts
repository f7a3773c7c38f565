import { Body, Controller, Headers, HttpCode, Inject, Param, Post } from '@nestjs/common';
import { type GatekeeperDecision, type GatekeeperExplanation } from '@gatehouse/guard/gatekeeper';
import { assertMay, authenticateOperator } from '../http/operator-auth.js';
import { parseRequest } from '../http/parse-request.js';
import { type PolicyOptions } from '../policy-config.js';
import { POLICY_DECISIONS, POLICY_OPTIONS } from '../tokens.js';
import { DecideRequest, type PolicyDecisions } from './policy-decisions.js';

@Controller('v1/policy-sets')
export class DecideController {
  constructor(
    @Inject(POLICY_DECISIONS) private readonly decisions: PolicyDecisions,
    @Inject(POLICY_OPTIONS) private readonly options: PolicyOptions,
  ) {}

  private request(authorization: string | undefined, policySetId: string, body: unknown): DecideRequest {
    assertMay(authenticateOperator(authorization, this.options.operators), policySetId);
    return parseRequest(DecideRequest, body);
  }

  @Post(':policySetId/simulate')
  @HttpCode(200)
  simulate(@Headers('authorization') authorization: string | undefined, @Param('policySetId') policySetId: string, @Body() body: unknown): GatekeeperDecision {
    return this.decisions.simulate(policySetId, this.request(authorization, policySetId, body));
  }

  @Post(':policySetId/explain')
  @HttpCode(200)
  explain(@Headers('authorization') authorization: string | undefined, @Param('policySetId') policySetId: string, @Body() body: unknown): GatekeeperExplanation {
    return this.decisions.explain(policySetId, this.request(authorization, policySetId, body));
  }

  @Post(':policySetId/evaluate')
  @HttpCode(200)
  evaluate(@Headers('authorization') authorization: string | undefined, @Param('policySetId') policySetId: string, @Body() body: unknown): Promise<GatekeeperDecision & { decisionId: string }> {
    return this.decisions.evaluate(policySetId, this.request(authorization, policySetId, body));
  }
}
