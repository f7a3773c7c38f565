import { Controller, Get, Headers, Inject, Param, Query } from '@nestjs/common';
import { z } from 'zod';
import { type PolicyEngine } from '../engine/policy-engine.js';
import { PolicyError } from '../errors.js';
import { assertMay, authenticateOperator } from '../http/operator-auth.js';
import { parseRequest } from '../http/parse-request.js';
import { admits } from '@gatehouse/service-runtime';
import { type PolicyOptions } from '../policy-config.js';
import { POLICY_ENGINE, POLICY_OPTIONS } from '../tokens.js';
import { diffJson, type JsonChange } from './bundle-diff.js';
import { type VersionView, viewOf } from './version-view.js';

export const Revision = z.coerce.number().int().min(1);

@Controller('v1/policy-sets')
export class ReadVersionsController {
  constructor(
    @Inject(POLICY_ENGINE) private readonly engine: PolicyEngine,
    @Inject(POLICY_OPTIONS) private readonly options: PolicyOptions,
  ) {}

  /** The policy sets this operator may see, each with its newest version (no bundle). */
  @Get()
  list(@Headers('authorization') authorization: string | undefined): { items: VersionView[] } {
    const operator = authenticateOperator(authorization, this.options.operators);
    return { items: this.engine.sets().filter((v) => admits(operator.policySets, v.policySetId)).map((v) => viewOf(v, false)) };
  }

  /** Every version of a policy set, oldest first (no bundles). */
  @Get(':policySetId/versions')
  versions(@Headers('authorization') authorization: string | undefined, @Param('policySetId') policySetId: string): { items: VersionView[] } {
    assertMay(authenticateOperator(authorization, this.options.operators), policySetId);
    const items = this.engine.versions(policySetId);
    if (items.length === 0) throw new PolicyError('POLICY.NOT_FOUND');
    return { items: items.map((v) => viewOf(v, false)) };
  }

  /** One version with its bundle. */
  @Get(':policySetId/versions/:revision')
  version(@Headers('authorization') authorization: string | undefined, @Param('policySetId') policySetId: string, @Param('revision') revision: string): VersionView {
    assertMay(authenticateOperator(authorization, this.options.operators), policySetId);
    const found = this.engine.version(policySetId, parseRequest(Revision, revision));
    if (!found) throw new PolicyError('POLICY.NOT_FOUND');
    return viewOf(found);
  }

  /** What changed from one version to another, by JSON pointer (policies matched by id). */
  @Get(':policySetId/diff')
  diff(@Headers('authorization') authorization: string | undefined, @Param('policySetId') policySetId: string, @Query() query: unknown): { from: number; to: number; changes: JsonChange[] } {
    assertMay(authenticateOperator(authorization, this.options.operators), policySetId);
    const { from, to } = parseRequest(z.strictObject({ from: Revision, to: Revision }), query);
    const a = this.engine.version(policySetId, from);
    const b = this.engine.version(policySetId, to);
    if (!a || !b) throw new PolicyError('POLICY.NOT_FOUND');
    return { from, to, changes: diffJson(a.bundle, b.bundle) };
  }
}
