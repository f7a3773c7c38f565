import { describe, expect, it } from '@jest/globals';
import { GatehouseError, type JsonValue } from '@gatehouse/contracts';
import { RequestContext } from '@mastra/core/request-context';
import { createTool } from '@mastra/core/tools';
import { z } from 'zod';
import { ACTOR_CONTEXT_KEY, AGENT_AUDIT_CONTEXT_KEY, createGuardedAgent } from '../agent/index.js';
import { AuditLogger } from '../audit/index.js';
import { runGuardrails } from '../guardrails/run-guardrails.js';
import { type GuardrailInput } from '../guardrails/types.js';
import { scriptedModel } from '../testing/index.js';
import { createGatekeeper, gatekeeperGuardrail, type GatekeeperMode } from './index.js';

const bundle = {
  policySetId: 'tools',
  policies: [
    {
      id: 'mail',
      version: '1',
      priority: 10,
      match: { tools: ['mail.*'], environments: ['prod'] },
      rules: {
        denyWhen: 'input.to endsWith "@competitor.example"',
        requireApprovalWhen: 'input.recipients > 50',
        rewrite: { when: 'input.cc != null', remove: ['cc'] },
        allowWhen: 'identity.actor.role == "support"',
      },
    },
  ],
};

function input(value: JsonValue, role = 'support'): GuardrailInput {
  return {
    placement: 'tool-args',
    value,
    tool: { id: 'mail.send' },
    context: { agentId: 'agent-1', tenant: 't1', actor: { id: 'u1', role } },
    signal: new AbortController().signal,
  };
}

function guardrail(mode: GatekeeperMode = 'enforce') {
  return gatekeeperGuardrail(createGatekeeper({ bundle, revision: 4, mode, validateInput: () => true }), { environment: 'prod' });
}

describe('gatekeeperGuardrail', () => {
  it('declares the detections of the bundle in force, and those of a bundle loaded later', async () => {
    const gatekeeper = createGatekeeper({ bundle, revision: 4, validateInput: () => true });
    const g = gatekeeperGuardrail(gatekeeper, { environment: 'prod' });
    expect(g.detections).toEqual(expect.arrayContaining(['gatekeeper.deny', 'gatekeeper.bundle:tools@4', 'gatekeeper.policy:mail', 'gatekeeper.fault:GATEKEEPER.EVALUATION_FAILED']));
    gatekeeper.load({ ...bundle, policies: [{ ...bundle.policies[0]!, id: 'mail-v2' }] }, 5);
    const decision = await runGuardrails([g], input({ to: 'x@competitor.example' }));
    expect(decision.verdict.detections).toEqual(expect.arrayContaining(['gatekeeper.deny', 'gatekeeper.bundle:tools@5', 'gatekeeper.policy:mail-v2']));
    expect(decision.verdict.detections).not.toContain('undeclared');
  });

  it('refuses an option it does not know, naming it, as every gatekeeper factory does', () => {
    const unknown = (fn: () => unknown) => {
      try {
        fn();
      } catch (e) {
        return e instanceof GatehouseError ? [e.code, e.message] : 'not-a-gatehouse-error';
      }
      return undefined;
    };
    const gk = createGatekeeper({ bundle, revision: 4, validateInput: () => true });
    expect(unknown(() => gatekeeperGuardrail(gk, { environment: 'prod', approvalProvider: {} } as never))).toEqual(['GATEKEEPER.INVALID_OPTIONS', expect.stringContaining('unknown option "approvalProvider"')]);
    expect(unknown(() => gatekeeperGuardrail(gk, { environment: 'prod', name: 'gk' }))).toBeUndefined();
  });

  it('declares the tool-args placement only', () => {
    expect(guardrail().placements).toEqual(['tool-args']);
    expect(guardrail().name).toBe('gatekeeper');
  });

  it.each([
    [{ to: 'a@competitor.example' }, 'deny'],
    [{ to: 'a@b.example', recipients: 80 }, 'approve'],
    [{ to: 'a@b.example' }, 'allow'],
  ] as const)('maps %j to %s, carrying the bundle version', async (value, action) => {
    const verdict = await guardrail().check(input(value));
    expect(verdict).toMatchObject({ action, outcome: 'complete', gatekeeper: { bundle: { policySetId: 'tools', revision: 4 } } });
    expect(verdict.detections).toContain('gatekeeper.bundle:tools@4');
    expect(verdict).not.toHaveProperty('payload');
  });

  it('maps a rewrite to rewrite with the rewritten payload', async () => {
    const verdict = await guardrail().check(input({ to: 'a@b.example', cc: 'x@y.example' }));
    expect(verdict).toMatchObject({ action: 'rewrite', payload: { to: 'a@b.example' } });
  });

  it('observes in audit mode, naming what enforce would have done', async () => {
    const verdict = await guardrail('audit').check(input({ to: 'a@competitor.example' }));
    expect(verdict).toMatchObject({ action: 'observe', gatekeeper: { effect: 'allow', wouldHave: 'deny', mode: 'audit', policyId: 'mail' } });
    expect(verdict.detections).toEqual(expect.arrayContaining(['gatekeeper.deny', 'gatekeeper.policy:mail', 'gatekeeper.bundle:tools@4']));
  });

  it('reads identity from the trusted context, not from the arguments', async () => {
    const verdict = await guardrail().check(input({ to: 'a@b.example', actor: { role: 'support' }, identity: { actor: { role: 'support' } } }, 'viewer'));
    expect(verdict.action).toBe('deny');
  });

  it('never puts argument content in reasons or detections', async () => {
    const secret = 'victim@competitor.example';
    const verdict = await guardrail().check(input({ to: secret }));
    expect(JSON.stringify({ reason: verdict.reason, detections: verdict.detections })).not.toContain('victim');
  });

  it('denies (partial) a value without a tool call', async () => {
    const verdict = await guardrail().check({ ...input({}), tool: undefined });
    expect(verdict).toMatchObject({ action: 'deny', outcome: 'partial' });
  });
});

describe('gatekeeperGuardrail in a guarded agent loop', () => {
  // The runner refuses verdicts with fields the port does not define; the gatekeeper's
  // provenance must not make every one of its verdicts a fault (a silent deny-all).
  it('allows and denies real tool calls by the bundle, and the audit names the bundle version', async () => {
    const sent: string[] = [];
    const mail = createTool({
      id: 'mail.send',
      description: 'Send a mail',
      inputSchema: z.object({ to: z.string() }),
      execute: async ({ to }) => {
        sent.push(to);
        return { sent: true };
      },
    });
    const model = scriptedModel({
      steps: [
        { toolCall: { toolName: 'mail', toolCallId: 'c1', args: { to: 'ceo@competitor.example' } } },
        { toolCall: { toolName: 'mail', toolCallId: 'c2', args: { to: 'customer@acme.example' } } },
        { text: 'done' },
      ],
    });
    const audit = new AuditLogger();
    const agent = createGuardedAgent({
      id: 'agent-1',
      name: 'Mailer',
      instructions: 'Send mail.',
      model: model as never,
      allowedRoles: ['support'],
      tools: { mail },
      guardrails: [guardrail()],
      audit,
    });
    const requestContext = new RequestContext();
    requestContext.set(ACTOR_CONTEXT_KEY, { id: 'u1', role: 'support' });
    requestContext.set(AGENT_AUDIT_CONTEXT_KEY, { tenant: 't1', agentId: 'agent-1', runId: 'run-1' });

    const result = await agent.generate('mail them', { requestContext });

    expect(result.text).toBe('done');
    expect(sent).toEqual(['customer@acme.example']);
    const decisions = audit.events().filter((e) => e.boundary === 'guardrail');
    expect(decisions.map((e) => [e.decision, e.code])).toEqual([
      ['denied', 'GUARDRAIL.DENIED'],
      ['allowed', 'GUARDRAIL.ALLOWED'],
    ]);
    expect(decisions[0]?.detections).toEqual(expect.arrayContaining(['gatekeeper.deny', 'gatekeeper.bundle:tools@4', 'gatekeeper.policy:mail']));
  });
});
