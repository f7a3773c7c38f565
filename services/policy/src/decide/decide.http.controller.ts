import { Body, Controller, Headers, HttpCode, Inject, Logger, Param, Post } from '@nestjs/common';
import { type GatekeeperDecision, type GatekeeperExplanation } from '@gatehouse/gatekeeper';
import { assertMay, authenticateOperator } from '../http/operator-auth.js';
import { parseRequest } from '../http/parse-request.js';
import { PolicyError } from '../errors.js';
import { type PolicyOperator, type PolicyOptions } from '../policy-config.js';
import { POLICY_DECISIONS, POLICY_OPTIONS } from '../tokens.js';
import { attribute } from './attribution.js';
import { DecideRequest, type PolicyDecisions, type RecordedDecision } from './policy-decisions.js';

const REFUSED: Record<'read-only' | 'foreign-tenant', string> = {
  'read-only': 'this operator records no decisions (no tenants configured): simulate or explain instead',
  'foreign-tenant': 'this operator may not record decisions for this tenant',
};

@Controller('v1/policy-sets')
export class DecideController {
  private readonly log = new Logger('policy-decide');

  constructor(
    @Inject(POLICY_DECISIONS) private readonly decisions: PolicyDecisions,
    @Inject(POLICY_OPTIONS) private readonly options: PolicyOptions,
  ) {}

  private request(authorization: string | undefined, policySetId: string, body: unknown): { operator: PolicyOperator; request: DecideRequest } {
    const operator = authenticateOperator(authorization, this.options.operators);
    assertMay(operator, policySetId);
    return { operator, request: parseRequest(DecideRequest, body) };
  }

  @Post(':policySetId/simulate')
  @HttpCode(200)
  simulate(@Headers('authorization') authorization: string | undefined, @Param('policySetId') policySetId: string, @Body() body: unknown): GatekeeperDecision {
    return this.decisions.simulate(policySetId, this.request(authorization, policySetId, body).request);
  }

  @Post(':policySetId/explain')
  @HttpCode(200)
  explain(@Headers('authorization') authorization: string | undefined, @Param('policySetId') policySetId: string, @Body() body: unknown): GatekeeperExplanation {
    return this.decisions.explain(policySetId, this.request(authorization, policySetId, body).request);
  }

  /** Records, so as the caller: 403 for a read-only operator or another tenant, before anything is decided. */
  @Post(':policySetId/evaluate')
  @HttpCode(200)
  evaluate(@Headers('authorization') authorization: string | undefined, @Param('policySetId') policySetId: string, @Body() body: unknown): Promise<RecordedDecision> {
    const { operator, request } = this.request(authorization, policySetId, body);
    const answer = attribute(operator, request.identity);
    if (!answer.ok) {
      if (answer.refusal === 'tenant-required') {
        throw new PolicyError('POLICY.INVALID_REQUEST', { fields: [{ field: 'identity.tenant', problem: 'required: the operator records for more than one tenant' }] });
      }
      // Reported without the body's values: the operator is configuration, the tenant it named is not.
      this.log.warn(`refused to record a decision {"code":"POLICY.FORBIDDEN","operator":${JSON.stringify(operator.id)},"reason":"${answer.refusal}"}`);
      throw new PolicyError('POLICY.FORBIDDEN', { reason: answer.refusal }, undefined, REFUSED[answer.refusal]);
    }
    return this.decisions.evaluate(policySetId, request, answer.attribution);
  }
}
