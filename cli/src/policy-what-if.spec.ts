import { describe, expect, it } from '@jest/globals';
import { RequestContext } from '@mastra/core/request-context';
import { createTool } from '@mastra/core/tools';
import { z } from 'zod';
import { ACTOR_CONTEXT_KEY, AGENT_AUDIT_CONTEXT_KEY, AuditLogger, createGuardedAgent, toDecisionEvent } from '@gatehouse/guard';
import { createGatekeeper } from '@gatehouse/gatekeeper';
import { gatekeeperGuardrail } from '@gatehouse/guard/gatekeeper';
import { scriptedModel } from '@gatehouse/guard/testing';
import { changeOf, describeWhatIf, recordedGatekeeperDecision, whatIf } from './policy-what-if.js';

// The guard's own records of gatekeeper decisions (boundary `guardrail`), as they reach the audit
// topic, read back by what-if: an allow names its bundle version too.
async function guardRecords(amounts: number[], role: string) {
  const audit = new AuditLogger();
  const gatekeeper = createGatekeeper({
    revision: 3,
    bundle: { policySetId: 'refunds', policies: [{ id: 'limit', version: '1', priority: 10, match: { tools: ['refund'] }, rules: { denyWhen: 'input.amount > 100', allowWhen: "identity.actor.role == 'support'" } }] },
  });
  const refund = createTool({ id: 'refund', description: 'Refund', inputSchema: z.object({ amount: z.number() }), execute: async ({ amount }) => ({ amount }) });
  const steps = [...amounts.map((amount, i) => ({ toolCall: { toolName: 'refund', toolCallId: `c${i}`, args: { amount } } })), { text: 'done' }];
  const agent = createGuardedAgent({
    id: 'refund-bot', name: 'Refunds', instructions: 'Refund.', model: scriptedModel({ steps }) as never, allowedRoles: [role],
    tools: { refund }, guardrails: [gatekeeperGuardrail(gatekeeper)], audit, maxSteps: amounts.length + 1,
  });
  const requestContext = new RequestContext();
  requestContext.set(ACTOR_CONTEXT_KEY, { id: `user:${role}`, role });
  requestContext.set(AGENT_AUDIT_CONTEXT_KEY, { tenant: 'acme', agentId: 'refund-bot', runId: 'run-1', entryPath: 'test' });
  await agent.generate('refund', { requestContext });
  return audit.events().map((e) => toDecisionEvent(e, { source: 'guard:test', defaultTenant: 'acme' }));
}

describe('what-if over the guard\'s recorded gatekeeper decisions', () => {
  it('reads allow and deny decisions of the gatekeeper guardrail, with the bundle they were made under', async () => {
    const recorded = (await guardRecords([50, 500], 'support')).map(recordedGatekeeperDecision).filter((r) => r !== undefined);
    expect(recorded.map((r) => [r.toolId, r.effect, r.bundle, r.agentId, r.actor?.role, r.tenant])).toEqual([
      ['refund', 'allow', 'refunds@3', 'refund-bot', 'support', 'acme'],
      ['refund', 'deny', 'refunds@3', 'refund-bot', 'support', 'acme'],
    ]);
  });

  it('reports each change against a candidate, and undetermined where the candidate reads the arguments', async () => {
    const recorded = (await guardRecords([50, 500], 'support')).map(recordedGatekeeperDecision).filter((r) => r !== undefined);
    const frozen = createGatekeeper({ bundle: { policySetId: 'refunds', policies: [{ id: 'freeze', version: '1', priority: 1, match: { tools: ['refund'] }, rules: { denyWhen: 'true' } }] } });
    const report = whatIf(frozen, recorded, { from: '2026-11-30T00:00:00.000Z' });
    expect(report.counts).toEqual({ 'newly-denied': 1, 'newly-allowed': 0, 'newly-approval-gated': 0, unchanged: 1, undetermined: 0 });
    expect(report.rows).toMatchObject([{ change: 'newly-denied', candidate: 'deny', policyId: 'freeze', decision: { effect: 'allow' } }]);
    expect(describeWhatIf(report)).toMatch(/newly-denied .* refund \[refund-bot support:user:support\] allow under refunds@3 -> deny by freeze$/m);
    const empty = createGatekeeper({ bundle: { policySetId: 'refunds', policies: [{ id: 'other', version: '1', priority: 1, match: { tools: ['other'] }, rules: { allowWhen: 'true' } }] } });
    expect(describeWhatIf(whatIf(empty, recorded, { from: 'x' }))).toMatch(/-> deny \(no policy allows it\)$/m);
    const reading = createGatekeeper({ bundle: { policySetId: 'refunds', policies: [{ id: 'cap', version: '1', priority: 1, match: { tools: ['refund'] }, rules: { allowWhen: 'input.amount < 1000' } }] } });
    expect(whatIf(reading, recorded, { from: 'x' }).counts.undetermined).toBe(2);
  });

  it('ignores records that are not gatekeeper decisions, and malformed ones', async () => {
    const events = await guardRecords([50], 'support');
    const others = events.filter((e) => e.payload.boundary !== 'guardrail');
    expect(others.length).toBeGreaterThan(0);
    expect(others.map(recordedGatekeeperDecision).filter((r) => r !== undefined)).toEqual([]);
    for (const junk of [null, 'x', {}, { ...events[0], payload: { ...events[0]!.payload, decisionId: 'not-a-uuid' } }]) expect(recordedGatekeeperDecision(junk)).toBeUndefined();
  });

  it('compares effects: allow and rewrite both let the call through', () => {
    const determined = (effect: 'allow' | 'deny' | 'require-approval' | 'rewrite') => ({ determined: true as const, effect, bundle: { policySetId: 's' } });
    expect(changeOf('allow', determined('rewrite'))).toBe('unchanged');
    expect(changeOf('deny', determined('rewrite'))).toBe('newly-allowed');
    expect(changeOf('require-approval', determined('allow'))).toBe('newly-allowed');
    expect(changeOf('allow', determined('require-approval'))).toBe('newly-approval-gated');
    expect(changeOf('require-approval', determined('deny'))).toBe('newly-denied');
    expect(changeOf('deny', { determined: false, policyId: 'p', bundle: { policySetId: 's' } })).toBe('undetermined');
  });
});
