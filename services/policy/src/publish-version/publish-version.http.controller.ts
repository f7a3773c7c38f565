import { Body, Controller, Headers, HttpCode, Inject, Param, Post } from '@nestjs/common';
import { type JsonValue } from '@gatehouse/contracts';
import { compileGatekeeperBundle } from '@gatehouse/gatekeeper';
import { z } from 'zod';
import { type PolicyEngine } from '../engine/policy-engine.js';
import { PolicyError } from '../errors.js';
import { assertMay, authenticateOperator, POLICY_SET_ID } from '../http/operator-auth.js';
import { parseRequest } from '../http/parse-request.js';
import { type PolicyOptions } from '../policy-config.js';
import { POLICY_ENGINE, POLICY_OPTIONS } from '../tokens.js';
import { type VersionView, viewOf } from '../read-versions/version-view.js';

/** `{ document }` (the bundle as YAML or JSON text) or `{ bundle }` (as a JSON object). */
export const PublishBody = z.union([z.strictObject({ document: z.string().min(1).max(1_000_000) }), z.strictObject({ bundle: z.record(z.string(), z.unknown()) })]);

@Controller('v1/policy-sets')
export class PublishVersionController {
  constructor(
    @Inject(POLICY_ENGINE) private readonly engine: PolicyEngine,
    @Inject(POLICY_OPTIONS) private readonly options: PolicyOptions,
  ) {}

  /**
   * Validates the bundle (the gatekeeper's schema, 422 with every problem's path; then each
   * expression compiled, 422 naming the policy, the field and the position), then publishes
   * it as the next immutable revision: signed, appended to the policies log, answered once folded
   * (201). Guards following the log pick it up without a restart.
   */
  @Post(':policySetId/versions')
  @HttpCode(201)
  async publish(@Headers('authorization') authorization: string | undefined, @Param('policySetId') policySetId: string, @Body() body: unknown): Promise<VersionView> {
    const operator = authenticateOperator(authorization, this.options.operators);
    if (!POLICY_SET_ID.test(policySetId)) throw new PolicyError('POLICY.NOT_FOUND');
    assertMay(operator, policySetId, true);
    const request = parseRequest(PublishBody, body);
    // Compiled as every guard's load compiles it: a bundle no guard could load is never signed or distributed.
    const { bundle } = compileGatekeeperBundle('document' in request ? request.document : request.bundle);
    if (bundle.policySetId !== policySetId) {
      throw new PolicyError('POLICY.INVALID_BUNDLE', { field: 'policySetId' }, undefined, 'the bundle names another policy set than the URL');
    }
    const published = await this.engine.publish(policySetId, bundle as unknown as Record<string, JsonValue>, operator.id, 'policies');
    return viewOf(published);
  }
}
